package fuse

import (
	"sync"

	"github.com/iovfs/iovfs/block"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// readViews answers a READ of len(buf) bytes at off with views of the
// file's own memory where its driver offers them (vfs.Proc.ReadDirect: an
// ext4 dax file's device memory): go-fuse then
// writes the reply to /dev/fuse straight from them with one writev, and
// the kernel's copy into the reader's pages is the only one, where Pread
// into buf and the write from it make two. The views are gathered in
// rr, up to maxViews of them; what is left after the last view, or
// after a part the driver has no view of (a hole of an ext4 file, inline
// data), is read with Pread into buf, which no view uses. It reports
// false, having added nothing, when the driver has no view at off; the
// caller then reads with Pread. A short reply means end of file, so the
// views stop only at the end of the file, at len(buf) bytes or at an
// error after some bytes (a partial transfer is a success).
//
// The views stay valid until go-fuse has written the reply: rr holds
// the handle, and so the export's descriptor and the mount, until go-fuse
// calls Done, after the write (rr is a vectored result).
func (r *rawFS) readViews(rr *readResult, buf []byte, off int64) bool {
	p := r.s.base
	fd := rr.h.fd
	want := len(buf)
	for rr.size < want {
		left := want - rr.size
		if rr.nv == maxViews-1 {
			break
		}
		v, err := p.ReadDirect(fd, off, left)
		if err != nil {
			if rr.nv == 0 {
				return false
			}
			break
		}
		if len(v) == 0 {
			return true // the end of the file
		}
		rr.add(v)
		off += int64(len(v))
	}
	if left := want - rr.size; left > 0 {
		if k, err := p.Pread(fd, buf[:left], off); err == nil && k > 0 {
			rr.add(buf[:k])
		}
	}
	return true
}

// maxViews bounds the pieces of a READ reply: one writev of the reply
// header, its READ header and the pieces. An ext4 file lies in extents,
// so a 1 MiB READ usually takes one or a handful.
const maxViews = 64

// readResult is a READ reply: views of the file's memory (readViews) or
// a part of go-fuse's buffer, handed to go-fuse as a vector (Slices), so
// that it writes them with one writev and calls Done only after that
// write. Results are pooled so that a READ allocates nothing here. Done
// ends the request's use of its handle, so the file, and the memory the
// views show, stay open until then.
type readResult struct {
	v    [maxViews][]byte
	nv   int
	size int
	s    *Server
	h    *handle
}

var readResults = sync.Pool{New: func() any { return new(readResult) }}

func (r *readResult) add(b []byte) {
	r.v[r.nv] = b
	r.nv++
	r.size += len(b)
}

// Slices returns the reply's pieces; go-fuse writes them after its
// headers with one writev.
func (r *readResult) Slices() ([][]byte, gofuse.Status) { return r.v[:r.nv], gofuse.OK }

// Bytes returns the reply in one piece: the piece itself when there is
// one, else the pieces copied into buf (grown if too small), under the
// fault guard, since a view of device memory may fault (EIO then). They
// are copied from the last, which may lie at the start of buf (the part
// read with Pread into go-fuse's buffer, which buf may be).
func (r *readResult) Bytes(buf []byte) ([]byte, gofuse.Status) {
	if r.nv == 1 {
		return r.v[0], gofuse.OK
	}
	if cap(buf) < r.size {
		buf = make([]byte, r.size)
	}
	buf = buf[:r.size]
	end := r.size
	for i := r.nv - 1; i >= 0; i-- {
		v := r.v[i]
		end -= len(v)
		if _, err := block.Copy(buf[end:], v); err != nil {
			return nil, gofuse.EIO
		}
	}
	return buf, gofuse.OK
}

func (r *readResult) Size() int { return r.size }

func (r *readResult) Done() {
	if r.h != nil {
		r.s.putHandle(r.h)
	}
	clear(r.v[:r.nv])
	r.nv, r.size, r.s, r.h = 0, 0, nil, nil
	readResults.Put(r)
}
