package block

import "syscall"

// memReader reads MemTotal and MemAvailable from /proc/meminfo through a
// descriptor it keeps open, into a buffer of its own, so that a read after
// the first allocates nothing: it runs after garbage collections, beside
// code whose allocations are being counted.
type memReader struct {
	fd     int
	opened bool
	buf    [8 << 10]byte
}

// read returns the machine's physical memory and the memory available
// for new use without swapping (MemTotal and MemAvailable, in bytes).
func (m *memReader) read() (total, avail int64, ok bool) {
	if !m.opened {
		fd, err := syscall.Open("/proc/meminfo", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return 0, 0, false
		}
		m.fd, m.opened = fd, true
	}
	n, err := syscall.Pread(m.fd, m.buf[:], 0)
	if err != nil || n <= 0 {
		return 0, 0, false
	}
	return meminfo(m.buf[:n])
}

// memInfo is memReader.read for one call.
func memInfo() (total, avail int64, ok bool) {
	var m memReader
	defer func() {
		if m.opened {
			syscall.Close(m.fd)
		}
	}()
	return m.read()
}
