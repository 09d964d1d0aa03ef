package vfs

import "golang.org/x/sys/unix"

// NoatimeHandle is a handle of a file system that updates a file's access
// time itself when it is read. The VFS tells it whether its open file has
// O_NOATIME: once at open, before any read, and again at each F_SETFL
// that sets or clears the flag (callers are the open file's owner or
// CAP_FOWNER, checked before). While it is set, reads through the handle
// leave the access time alone, as Linux's file_accessed tests the open
// file's O_NOATIME before touch_atime.
type NoatimeHandle interface {
	SetNoatime(on bool)
}

// tellNoatime passes the O_NOATIME bit of flags to h if it keeps atime.
func tellNoatime(h Handle, flags int) {
	if n, ok := h.(NoatimeHandle); ok {
		n.SetNoatime(flags&unix.O_NOATIME != 0)
	}
}
