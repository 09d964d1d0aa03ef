package wasi

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// WASI errno values (wasi_snapshot_preview1 "errno"), in the spec's order.
const (
	errnoSuccess uint32 = iota
	errno2big
	errnoAcces
	errnoAddrinuse
	errnoAddrnotavail
	errnoAfnosupport
	errnoAgain
	errnoAlready
	errnoBadf
	errnoBadmsg
	errnoBusy
	errnoCanceled
	errnoChild
	errnoConnaborted
	errnoConnrefused
	errnoConnreset
	errnoDeadlk
	errnoDestaddrreq
	errnoDom
	errnoDquot
	errnoExist
	errnoFault
	errnoFbig
	errnoHostunreach
	errnoIdrm
	errnoIlseq
	errnoInprogress
	errnoIntr
	errnoInval
	errnoIo
	errnoIsconn
	errnoIsdir
	errnoLoop
	errnoMfile
	errnoMlink
	errnoMsgsize
	errnoMultihop
	errnoNametoolong
	errnoNetdown
	errnoNetreset
	errnoNetunreach
	errnoNfile
	errnoNobufs
	errnoNodev
	errnoNoent
	errnoNoexec
	errnoNolck
	errnoNolink
	errnoNomem
	errnoNomsg
	errnoNoprotoopt
	errnoNospc
	errnoNosys
	errnoNotconn
	errnoNotdir
	errnoNotempty
	errnoNotrecoverable
	errnoNotsock
	errnoNotsup
	errnoNotty
	errnoNxio
	errnoOverflow
	errnoOwnerdead
	errnoPerm
	errnoPipe
	errnoProto
	errnoProtonosupport
	errnoPrototype
	errnoRange
	errnoRofs
	errnoSpipe
	errnoSrch
	errnoStale
	errnoTimedout
	errnoTxtbsy
	errnoXdev
	errnoNotcapable
)

// linuxToWASI maps a Linux errno to its WASI errno. WASI's list is POSIX's,
// so every Linux errno with a POSIX name has an exact twin; the few Linux
// aliases (EWOULDBLOCK = EAGAIN, EDEADLOCK = EDEADLK, ENOTSUP = EOPNOTSUPP)
// share a number already. Linux-only errnos with no twin map to EIO, as
// wasi-libc has no way to carry them.
var linuxToWASI = [...]uint32{
	unix.E2BIG:           errno2big,
	unix.EACCES:          errnoAcces,
	unix.EADDRINUSE:      errnoAddrinuse,
	unix.EADDRNOTAVAIL:   errnoAddrnotavail,
	unix.EAFNOSUPPORT:    errnoAfnosupport,
	unix.EAGAIN:          errnoAgain,
	unix.EALREADY:        errnoAlready,
	unix.EBADF:           errnoBadf,
	unix.EBADMSG:         errnoBadmsg,
	unix.EBUSY:           errnoBusy,
	unix.ECANCELED:       errnoCanceled,
	unix.ECHILD:          errnoChild,
	unix.ECONNABORTED:    errnoConnaborted,
	unix.ECONNREFUSED:    errnoConnrefused,
	unix.ECONNRESET:      errnoConnreset,
	unix.EDEADLK:         errnoDeadlk,
	unix.EDESTADDRREQ:    errnoDestaddrreq,
	unix.EDOM:            errnoDom,
	unix.EDQUOT:          errnoDquot,
	unix.EEXIST:          errnoExist,
	unix.EFAULT:          errnoFault,
	unix.EFBIG:           errnoFbig,
	unix.EHOSTUNREACH:    errnoHostunreach,
	unix.EIDRM:           errnoIdrm,
	unix.EILSEQ:          errnoIlseq,
	unix.EINPROGRESS:     errnoInprogress,
	unix.EINTR:           errnoIntr,
	unix.EINVAL:          errnoInval,
	unix.EIO:             errnoIo,
	unix.EISCONN:         errnoIsconn,
	unix.EISDIR:          errnoIsdir,
	unix.ELOOP:           errnoLoop,
	unix.EMFILE:          errnoMfile,
	unix.EMLINK:          errnoMlink,
	unix.EMSGSIZE:        errnoMsgsize,
	unix.EMULTIHOP:       errnoMultihop,
	unix.ENAMETOOLONG:    errnoNametoolong,
	unix.ENETDOWN:        errnoNetdown,
	unix.ENETRESET:       errnoNetreset,
	unix.ENETUNREACH:     errnoNetunreach,
	unix.ENFILE:          errnoNfile,
	unix.ENOBUFS:         errnoNobufs,
	unix.ENODEV:          errnoNodev,
	unix.ENOENT:          errnoNoent,
	unix.ENOEXEC:         errnoNoexec,
	unix.ENOLCK:          errnoNolck,
	unix.ENOLINK:         errnoNolink,
	unix.ENOMEM:          errnoNomem,
	unix.ENOMSG:          errnoNomsg,
	unix.ENOPROTOOPT:     errnoNoprotoopt,
	unix.ENOSPC:          errnoNospc,
	unix.ENOSYS:          errnoNosys,
	unix.ENOTCONN:        errnoNotconn,
	unix.ENOTDIR:         errnoNotdir,
	unix.ENOTEMPTY:       errnoNotempty,
	unix.ENOTRECOVERABLE: errnoNotrecoverable,
	unix.ENOTSOCK:        errnoNotsock,
	unix.EOPNOTSUPP:      errnoNotsup,
	unix.ENOTTY:          errnoNotty,
	unix.ENXIO:           errnoNxio,
	unix.EOVERFLOW:       errnoOverflow,
	unix.EOWNERDEAD:      errnoOwnerdead,
	unix.EPERM:           errnoPerm,
	unix.EPIPE:           errnoPipe,
	unix.EPROTO:          errnoProto,
	unix.EPROTONOSUPPORT: errnoProtonosupport,
	unix.EPROTOTYPE:      errnoPrototype,
	unix.ERANGE:          errnoRange,
	unix.EROFS:           errnoRofs,
	unix.ESPIPE:          errnoSpipe,
	unix.ESRCH:           errnoSrch,
	unix.ESTALE:          errnoStale,
	unix.ETIMEDOUT:       errnoTimedout,
	unix.ETXTBSY:         errnoTxtbsy,
	unix.EXDEV:           errnoXdev,
}

// errnoOf returns the WASI errno for err: 0 for nil, the twin of the
// syscall.Errno it wraps, EIO for anything else.
func errnoOf(err error) uint32 {
	if err == nil {
		return errnoSuccess
	}
	var we wasiError
	if errors.As(err, &we) {
		return uint32(we)
	}
	var e syscall.Errno
	if !errors.As(err, &e) {
		return errnoIo
	}
	return linuxErrno(e)
}

// linuxErrno maps one Linux errno.
func linuxErrno(e syscall.Errno) uint32 {
	if e == 0 {
		return errnoSuccess
	}
	if uint(e) < uint(len(linuxToWASI)) {
		if w := linuxToWASI[e]; w != 0 {
			return w
		}
	}
	return errnoIo
}
