package vfs

// The file descriptor table. A lookup, which every read and write does, is
// two atomic loads and takes no lock. Changes (open, close, dup) take mu.

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// maxFDs is the descriptor limit, like RLIMIT_NOFILE's usual hard limit.
const maxFDs = 1 << 20

type fdTable struct {
	// slots is replaced, never resized in place, when the table grows;
	// each slot is read without a lock and written under mu.
	slots atomic.Pointer[[]atomic.Pointer[file]]

	// mu serialises changes to the table; lowest caches the lowest slot
	// that may be free (POSIX: open and dup return the lowest free fd).
	// cloexec is the FD_CLOEXEC bit of each descriptor, one bit per slot,
	// kept apart from slots (as Linux's close_on_exec bitmap is) so that a
	// lookup stays two loads; it is read and written under mu.
	mu      sync.Mutex
	lowest  int
	cloexec []uint64
}

func (t *fdTable) init() {
	s := make([]atomic.Pointer[file], 64)
	t.slots.Store(&s)
}

// get returns the file open as fd, or nil.
func (t *fdTable) get(fd int) *file {
	s := *t.slots.Load()
	if uint(fd) >= uint(len(s)) {
		return nil
	}
	return s[fd].Load()
}

// grow makes room for fd; mu must be held.
func (t *fdTable) grow(fd int) {
	old := *t.slots.Load()
	if fd < len(old) {
		return
	}
	n := len(old) * 2
	for n <= fd {
		n *= 2
	}
	s := make([]atomic.Pointer[file], n)
	for i := range old {
		s[i].Store(old[i].Load())
	}
	t.slots.Store(&s)
}

// install puts f in the lowest free slot at or above min and returns it.
func (t *fdTable) install(f *file, min int) (int, error) {
	return t.installFlags(f, min, false)
}

// setCloexec sets or clears fd's FD_CLOEXEC bit; mu must be held.
func (t *fdTable) setCloexec(fd int, on bool) {
	w := fd / 64
	if w >= len(t.cloexec) {
		if !on {
			return
		}
		t.cloexec = append(t.cloexec, make([]uint64, w+1-len(t.cloexec))...)
	}
	if on {
		t.cloexec[w] |= 1 << (fd % 64)
	} else {
		t.cloexec[w] &^= 1 << (fd % 64)
	}
}

// getCloexec reports fd's FD_CLOEXEC bit; mu must be held.
func (t *fdTable) getCloexec(fd int) bool {
	w := fd / 64
	return w < len(t.cloexec) && t.cloexec[w]&(1<<(fd%64)) != 0
}

// fdFlags returns fd's descriptor flags (FD_CLOEXEC), or EBADF.
func (t *fdTable) fdFlags(fd int) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := *t.slots.Load()
	if uint(fd) >= uint(len(s)) || s[fd].Load() == nil {
		return 0, errEBADF
	}
	if t.getCloexec(fd) {
		return unix.FD_CLOEXEC, nil
	}
	return 0, nil
}

// setFdFlags sets fd's descriptor flags, or gives EBADF.
func (t *fdTable) setFdFlags(fd, flags int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := *t.slots.Load()
	if uint(fd) >= uint(len(s)) || s[fd].Load() == nil {
		return errEBADF
	}
	t.setCloexec(fd, flags&unix.FD_CLOEXEC != 0)
	return nil
}

// installFlags is install with the new descriptor's FD_CLOEXEC bit.
func (t *fdTable) installFlags(f *file, min int, cloexec bool) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fd := max(min, t.lowest)
	for {
		if fd >= maxFDs {
			return -1, errEMFILE
		}
		t.grow(fd)
		s := *t.slots.Load()
		for ; fd < len(s); fd++ {
			if s[fd].Load() == nil {
				s[fd].Store(f)
				t.setCloexec(fd, cloexec)
				if min <= t.lowest && fd >= t.lowest {
					t.lowest = fd + 1
				}
				return fd, nil
			}
		}
	}
}

// replace puts f at fd and returns what was there (dup2).
func (t *fdTable) replace(fd int, f *file) (*file, error) {
	return t.replaceFlags(fd, f, false)
}

// replaceFlags is replace with the descriptor's FD_CLOEXEC bit (dup3).
func (t *fdTable) replaceFlags(fd int, f *file, cloexec bool) (*file, error) {
	if fd < 0 || fd >= maxFDs {
		return nil, errEBADF
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.grow(fd)
	s := *t.slots.Load()
	old := s[fd].Swap(f)
	t.setCloexec(fd, cloexec)
	if fd == t.lowest {
		t.lowest = fd + 1
	}
	return old, nil
}

// remove empties fd and returns the file that was there, or nil.
func (t *fdTable) remove(fd int) *file {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := *t.slots.Load()
	if uint(fd) >= uint(len(s)) {
		return nil
	}
	f := s[fd].Swap(nil)
	t.setCloexec(fd, false)
	if f != nil && fd < t.lowest {
		t.lowest = fd
	}
	return f
}
