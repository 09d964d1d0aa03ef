package vfs

import (
	"io/fs"
	"syscall"
)

// Errors are syscall.Errno values, as Linux returns them. These variables
// hold them as error interfaces made once, so returning one never allocates.
var (
	errEBADF     error = syscall.EBADF
	errEINVAL    error = syscall.EINVAL
	errESPIPE    error = syscall.ESPIPE
	errEMFILE    error = syscall.EMFILE
	errENOTTY    error = syscall.ENOTTY
	errEOPNOTSUP error = syscall.EOPNOTSUPP
	errEISDIR    error = syscall.EISDIR
	errENOENT    error = syscall.ENOENT
	errENOTDIR   error = syscall.ENOTDIR
)

// pathErr wraps err for a call that named a path, as the os package does,
// so errors.Is(err, fs.ErrNotExist) works and the message names the path.
func pathErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}
