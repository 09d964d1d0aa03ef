package wasi

import (
	"context"

	"github.com/tetratelabs/wazero/api"
	"golang.org/x/sys/unix"
)

// WASI sdflags.
const (
	sdflagRd = 1 << iota
	sdflagWr
)

// sock_shutdown(fd, how) errno: shutdown(2) of the process's descriptor.
// A descriptor that is not open gives EBADF, one that is not a socket
// ENOTSOCK, as Linux's shutdown gives them (wazero's own looks in a table
// of its own, where a file of the process is missing: EBADF). A socket is
// one the process imported from the host; how must be RD, WR or both
// (EINVAL otherwise), and the descriptor needs sock_shutdown.
func (w *instance) sockShutdown(_ context.Context, _ api.Module, stack []uint64) {
	fd, how := int32(stack[0]), uint32(stack[1])
	st, e := w.fstat(fd)
	if e != 0 {
		stack[0] = uint64(e)
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		stack[0] = uint64(errnoNotsock)
		return
	}
	var sh int
	switch how {
	case sdflagRd:
		sh = unix.SHUT_RD
	case sdflagWr:
		sh = unix.SHUT_WR
	case sdflagRd | sdflagWr:
		sh = unix.SHUT_RDWR
	default:
		stack[0] = uint64(errnoInval)
		return
	}
	if e := w.check(fd, rightSockShutdown); e != 0 {
		stack[0] = uint64(e)
		return
	}
	err := w.p.HostFile(int(fd), func(hfd int) error { return unix.Shutdown(hfd, sh) })
	stack[0] = uint64(errnoOf(err))
}
