package vfs

import (
	"syscall"

	"github.com/iovfs/iovfs/iov"
)

// ReadDirect returns a view of the bytes [off, off+len(b)) of the file
// open as fd, in the memory that holds them, instead of copying them as
// Pread does; see DirectReader for what the view is, how long it stays
// valid and when it is shorter than n. It checks fd as Pread does (EBADF
// for a descriptor not open for reading, ESPIPE for a stream, EINVAL for
// a negative off or n; n is clamped to
// 0x7ffff000 as a read's count is) and returns EOPNOTSUPP when the file's driver
// offers no direct view or none at off; the caller then uses Pread. An
// empty view with a nil error is the end of the file, or n == 0. It
// allocates nothing.
func (p *Proc) ReadDirect(fd int, off int64, n int) ([]byte, error) {
	f, err := p.fileAt(fd, off, fmRead)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, errEINVAL
	}
	n = min(n, iov.MaxCount)
	if err := verifyArea(off, n); err != nil {
		return nil, err
	}
	dr, ok := f.h.(DirectReader)
	if !ok {
		return nil, errEOPNOTSUPP
	}
	if n == 0 {
		return nil, nil
	}
	return dr.ReadDirect(off, n)
}

var errEOPNOTSUPP error = syscall.EOPNOTSUPP
