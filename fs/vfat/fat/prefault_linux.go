package fat

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// prefault maps the pages of b, about to be filled whole, in one call
// (MADV_POPULATE_WRITE) instead of one page fault per page as the copy
// into them reaches each. On a kernel without it nothing happens.
func prefault(b []byte) {
	if len(b) < 64<<10 {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := p &^ 4095
	end := (p + uintptr(len(b))) &^ 4095 // whole pages only
	if end <= start {
		return
	}
	unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_POPULATE_WRITE)
}
