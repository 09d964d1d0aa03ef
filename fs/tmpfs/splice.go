package tmpfs

// Splicing from a tmpfs file (Linux's shmem_file_splice_read): a pipe
// takes references to the file's pages instead of copies of them.

import (
	"sync/atomic"

	"github.com/iovfs/iovfs/vfs"
)

var _ vfs.SpliceReader = (*OpenFile)(nil)

// zeroPage is what a hole splices as (Linux's ZERO_PAGE). Nothing writes
// into it: a pipe never writes into memory it holds by reference.
var zeroPage page

// SplicePage implements vfs.SpliceReader: a view of the file's bytes from
// off, at most n of them, as far as they are contiguous in memory (the
// rest of off's page, or of its run of pages) and not past the end of
// the file; empty at or past the end. A hole is a view of zeros. It takes
// no lock: page pointers and the size are loaded atomically, and the
// view is memory the garbage collector keeps while a pipe holds it, which
// later writes to the file change in place, as they change the page
// cache pages of a Linux pipe. A negative off gives EINVAL.
func (h *OpenFile) SplicePage(off int64, n int) ([]byte, error) {
	if off < 0 {
		return nil, errEINVAL
	}
	f := h.f
	h.accessed()
	size := atomic.LoadInt64(&f.size)
	if off >= size || n <= 0 {
		return nil, nil
	}
	po := int(off & pageMask)
	idx := off >> pageShift
	k := int(min(int64(n), size-off))
	var b []byte
	if leaf := f.pages.leaf(idx); leaf != nil {
		b = leaf.data(idx&radixMask, po+k)
	}
	if b == nil {
		b = zeroPage[:]
	}
	b = b[po:]
	return b[:min(k, len(b)):min(k, len(b))], nil
}
