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
// The view stays valid until go-fuse has written the reply: the kernel
// keeps the file open, and so the export's descriptor, while a READ on it
// is in flight, and Unmount closes descriptors only after the server loop
// has ended.
func (r *rawFS) readDirect(h *handle, buf []byte, off int64) (gofuse.ReadResult, bool) {
	v, err := h.p.ReadDirect(h.fd, off, len(buf))
	if err != nil {
		return nil, false
	}
	rr := readResults.Get().(*readResult)
	if len(v) == len(buf) || len(v) == 0 {
		// All of it, or the end of the file.
		rr.b = v
		return rr, true
	}
	n, err := block.Copy(buf, v) // EIO, not a crash, if the memory faults
	if err != nil {
		rr.Done()
		return nil, false
	}
	k, err := h.p.Pread(h.fd, buf[n:], off+int64(n))
	if err != nil {
		k = 0 // a partial transfer is a success
	}
	rr.b = buf[:n+k]
	return rr, true
}
