package fuse

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The kernel never updates the atime of a FUSE file (its inodes are
// S_NOATIME): the server does, when a READ or READDIR reaches it, by the
// rule of the iovfs mount it exports (vfs.AtimePolicy). That rule follows
// the host mount's flags: noatime, nodiratime, relatime, strictatime, and
// ro (no atime update, as touch_atime needs write access to the mount).
// No FUSE request tells the server of a remount, so it reads its mount's
// line of /proc/self/mountinfo once mounted and again each time the mount
// table changes, which poll reports (POLLPRI on an open mountinfo): a
// goroutine waits for that, and each OPEN and OPENDIR checks it too with
// a poll that does not wait (one system call, no read), so that an open
// made after a remount returned follows the new flags. A read through a
// file opened before may follow the old flags until the goroutine has
// caught up (microseconds).

// atimeWatch follows the host mount's flags.
type atimeWatch struct {
	root   string // the exported directory, a mount's root in the namespace
	strict atomic.Bool
	// check is the mountinfo the opens poll, or -1 (atomic: set once the
	// export already serves); mu serialises the reads of mountinfo and
	// the remounts they make. The descriptors are raw: an *os.File would
	// be in the Go runtime's epoll set, whose wake-ups take the change
	// that poll reports (mounts_poll reports each change once per open
	// file).
	check   atomic.Int32
	mu      sync.Mutex
	stopW   int // the write end of the stop pipe, or -1
	stopped sync.Once
	// gone is closed when the watch sees the host mount leave the table.
	gone chan struct{}
}

// hostAtimeFlags returns the atime flags of the host mount at mnt from
// mountinfo (the last mount there of a fuse type), as mount(2) flags:
// MS_NOATIME for noatime or a read-only mount, MS_NODIRATIME,
// MS_RELATIME or MS_STRICTATIME; ok is false if no such mount is listed.
func hostAtimeFlags(mountinfo []byte, mnt string) (flags uintptr, ok bool) {
	for _, line := range bytes.Split(mountinfo, []byte{'\n'}) {
		f := strings.Fields(string(line))
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 6 || len(f) < sep+4 || unescapeMount(f[4]) != mnt || !strings.HasPrefix(f[sep+1], "fuse") {
			continue
		}
		var fl uintptr
		for _, o := range strings.Split(f[5], ",") {
			switch o {
			case "ro":
				fl |= unix.MS_NOATIME
			case "noatime":
				fl |= unix.MS_NOATIME
			case "nodiratime":
				fl |= unix.MS_NODIRATIME
			case "relatime":
				fl |= unix.MS_RELATIME
			}
		}
		for _, o := range strings.Split(f[sep+3], ",") {
			if o == "ro" {
				fl |= unix.MS_NOATIME
			}
		}
		if fl&(unix.MS_NOATIME|unix.MS_RELATIME) == 0 {
			fl |= unix.MS_STRICTATIME
		}
		flags, ok = fl, true
	}
	return flags, ok
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if c, ok := octal(s[i+1 : i+4]); ok {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal(s string) (byte, bool) {
	if len(s) != 3 {
		return 0, false
	}
	var v int
	for _, c := range s {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v*8 + int(c-'0')
	}
	return byte(v), v < 256
}

// syncAtime applies the host mount's atime flags to the exported mount;
// it returns false once the host mount is gone.
func (s *Server) syncAtime(info []byte) bool {
	fl, ok := hostAtimeFlags(info, s.hostMnt)
	if !ok {
		return false
	}
	if err := s.base.Mount("", s.atime.root, "", unix.MS_REMOUNT|unix.MS_BIND|fl, ""); err != nil {
		return true // not a mount's root: the export keeps its mount's own rule
	}
	s.atime.strict.Store(fl&unix.MS_STRICTATIME != 0)
	return true
}

// resync reads mountinfo through f and applies it, under mu.
func (s *Server) resync(fd int) bool {
	s.atime.mu.Lock()
	defer s.atime.mu.Unlock()
	info, err := readAllAt(fd)
	if err != nil {
		return true
	}
	return s.syncAtime(info)
}

// checkAtime is the opens' check: if the mount table changed since the
// last check, the host mount's flags are read again before the open.
func (s *Server) checkAtime() {
	fd := int(s.atime.check.Load())
	if fd < 0 {
		return
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLPRI}}
	if n, err := unix.Poll(fds, 0); err == nil && n > 0 && fds[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0 {
		s.resync(fd)
	}
}

// watchAtime reads the host mount's flags now and starts following them.
func (s *Server) watchAtime(root string) {
	s.atime.root = root
	f, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	if !s.resync(f) {
		unix.Close(f)
		return
	}
	if c, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		s.atime.check.Store(int32(c))
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		unix.Close(f)
		return
	}
	s.atime.stopW = p[1]
	go func() {
		defer unix.Close(f)
		defer unix.Close(p[0])
		fds := []unix.PollFd{{Fd: int32(f), Events: unix.POLLPRI}, {Fd: int32(p[0]), Events: unix.POLLIN}}
		for {
			fds[0].Revents, fds[1].Revents = 0, 0
			if _, err := unix.Poll(fds, -1); err != nil {
				if err == unix.EINTR {
					continue
				}
				return
			}
			if fds[1].Revents != 0 {
				return
			}
			if fds[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0 {
				if !s.resync(f) {
					close(s.atime.gone) // unmounted
					return
				}
			}
		}
	}()
}

// stopAtime ends the watch (which also ends by itself once the host
// mount is gone), once no request is served.
func (s *Server) stopAtime() {
	s.atime.stopped.Do(func() {
		if s.atime.stopW >= 0 {
			unix.Close(s.atime.stopW)
		}
		if c := int(s.atime.check.Load()); c >= 0 {
			unix.Close(c)
		}
	})
}

// readAllAt reads the file open as fd whole, from offset 0.
func readAllAt(fd int) ([]byte, error) {
	var out []byte
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		n, err := unix.Pread(fd, buf, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
		off += int64(n)
	}
}
