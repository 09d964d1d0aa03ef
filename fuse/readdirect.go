package fuse

import (
	"github.com/iovfs/iovfs/block"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// readDirect serves a READ of len(buf) bytes at off from the file's own
// memory when its driver offers it (vfs.DirectReader: a file on an ext4
// mount with dax): the reply is then written to /dev/fuse straight from
// the device's mapping, one copy (the kernel's, into the reader's pages)
// where Pread into buf makes two. It reports false, having done nothing
// the caller must undo, when the driver has no view at off; the caller
// then reads with Pread. A view shorter than the request (the data stops
// being contiguous on the device) is copied into buf and the rest read
// with Pread after it, since a short READ reply means end of file.
//
// The view stays valid until go-fuse has written the reply: the reply
// holds the handle, and so the export's descriptor and the mount, until
// go-fuse calls Done.
func (r *rawFS) readDirect(h *handle, buf []byte, off int64) (gofuse.ReadResult, bool) {
	p := r.s.base
	v, err := p.ReadDirect(h.fd, off, len(buf))
	if err != nil {
		return nil, false
	}
	if len(v) != len(buf) && len(v) != 0 {
		n, err := block.Copy(buf, v) // EIO, not a crash, if the memory faults
		if err != nil {
			return nil, false
		}
		k, err := p.Pread(h.fd, buf[n:], off+int64(n))
		if err != nil {
			k = 0 // a partial transfer is a success
		}
		v = buf[:n+k]
	}
	// All of it, the end of the file, or the copy. The result holds h
	// until go-fuse has written the reply.
	rr := readResults.Get().(*readResult)
	rr.b, rr.s, rr.h = v, r.s, h
	return rr, true
}
