package shell

// Linear memory for programs outside the Go heap. wazero's default memory
// is a Go slice that grows by copying: a Go program's runtime grows its
// memory many times as it starts, each a copy of all of it, and the
// garbage collector then scans past it. Here a program's memory is
// reserved whole as address space when it starts (PROT_NONE, no swap
// reserved) and made readable and writable page by page as it grows: it
// never moves, the kernel gives it zeroed, and it is unmapped as soon as
// the program ends. wazero frees it only once the program's code has
// stopped (an interrupted program's resources are closed by the
// program's own goroutine), so no host call can touch it after.

import (
	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// allocMemory is the experimental.MemoryAllocator of programs.
func allocMemory(_, max uint64) experimental.LinearMemory {
	if max > 0 && max == uint64(int(max)) {
		b, err := unix.Mmap(-1, 0, int(max), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
		if err == nil {
			return &mappedMemory{buf: b}
		}
	}
	return &heapMemory{}
}

// mappedMemory is a reservation of the memory's maximum size whose first
// committed bytes are usable.
type mappedMemory struct {
	buf       []byte
	committed int
}

// Reallocate implements experimental.LinearMemory: the memory grows in
// place, or nil when it cannot.
func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	pg := uint64(unix.Getpagesize())
	want := int((size + pg - 1) / pg * pg)
	if want > m.committed {
		if err := unix.Mprotect(m.buf[m.committed:want], unix.PROT_READ|unix.PROT_WRITE); err != nil {
			return nil
		}
		m.committed = want
	}
	return m.buf[:size:size]
}

// Free implements experimental.LinearMemory.
func (m *mappedMemory) Free() {
	if m.buf != nil {
		unix.Munmap(m.buf)
		m.buf = nil
	}
}

// heapMemory is wazero's way, for when the address space cannot be
// reserved.
type heapMemory struct{ buf []byte }

func (m *heapMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.buf)) {
		b := make([]byte, size, max(size, 2*uint64(cap(m.buf))))
		copy(b, m.buf)
		m.buf = b
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *heapMemory) Free() { m.buf = nil }
