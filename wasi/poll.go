package wasi

// poll_oneoff on clocks and on descriptor readiness (Proc.Ppoll).

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/tetratelabs/wazero/api"
	"golang.org/x/sys/unix"
)

// WASI event types, clock ids and flags.
const (
	eventClock = iota
	eventFdRead
	eventFdWrite
)

const (
	clockRealtime = iota
	clockMonotonic
)

const (
	subclockAbstime   = 1
	eventFdHangup     = 1
	subscriptionSize  = 48
	eventSize         = 32
	maxSubscriptions  = 1 << 20
	pollInfiniteDelay = time.Duration(-1)
)

// poll_oneoff(in, out, nsubscriptions, nevents) errno.
//
// Descriptor subscriptions become one Ppoll whose timeout is the nearest
// clock deadline; clock subscriptions alone sleep until the nearest. The
// events are the ready descriptors (a descriptor that is not open reports
// EBADF in its event, one that hung up sets fd_readwrite_hangup) and every
// clock whose deadline has passed. A realtime clock with abstime is
// measured against the wall clock, a monotonic one against the host's
// CLOCK_MONOTONIC. Zero subscriptions give EINVAL, as wasi-libc expects.
func (w *instance) pollOneoff(ctx context.Context, mod api.Module, stack []uint64) {
	in, out, n, neventsPtr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	stack[0] = uint64(w.poll(ctx, mod.Memory(), in, out, n, neventsPtr))
}

type clockSub struct {
	userdata uint64
	deadline time.Duration // from the start of the call
	errno    uint16
}

type fdSub struct {
	userdata uint64
	typ      uint8
	errno    uint16
	slot     int // index in the poll set, or -1
}

func (w *instance) poll(ctx context.Context, mem api.Memory, in, out, n, neventsPtr uint32) uint32 {
	if n == 0 || n > maxSubscriptions {
		return errnoInval
	}
	subs, ok := mem.Read(in, n*subscriptionSize)
	if !ok {
		return errnoFault
	}
	evs, ok := mem.Read(out, n*eventSize)
	if !ok {
		return errnoFault
	}
	if _, ok := mem.Read(neventsPtr, 4); !ok {
		return errnoFault
	}
	le := binary.LittleEndian
	start := time.Now()
	var clocks []clockSub
	var fds []fdSub
	var set []unix.PollFd
	nearest := pollInfiniteDelay
	for i := uint32(0); i < n; i++ {
		s := subs[i*subscriptionSize:]
		ud := le.Uint64(s)
		switch s[8] {
		case eventClock:
			c := clockSub{userdata: ud}
			id, timeout, flags := le.Uint32(s[16:]), le.Uint64(s[24:]), le.Uint16(s[40:])
			d := time.Duration(timeout)
			if timeout > 1<<63-1 {
				d = 1<<63 - 1
			}
			if flags&subclockAbstime != 0 {
				switch id {
				case clockRealtime:
					d -= time.Duration(start.UnixNano())
				case clockMonotonic:
					var ts unix.Timespec
					unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
					d -= time.Duration(ts.Nano())
				}
			}
			if id != clockRealtime && id != clockMonotonic {
				c.errno = uint16(errnoInval)
				d = 0
			}
			c.deadline = max(d, 0)
			if nearest < 0 || c.deadline < nearest {
				nearest = c.deadline
			}
			clocks = append(clocks, c)
		case eventFdRead, eventFdWrite:
			f := fdSub{userdata: ud, typ: s[8], slot: -1}
			fd := int32(le.Uint32(s[16:]))
			if e := w.check(fd, rightPollFdReadwrite); e != 0 {
				f.errno = uint16(e)
				nearest = 0
			} else {
				ev := int16(unix.POLLIN)
				if f.typ == eventFdWrite {
					ev = unix.POLLOUT
				}
				f.slot = len(set)
				set = append(set, unix.PollFd{Fd: fd, Events: ev})
			}
			fds = append(fds, f)
		default:
			return errnoInval
		}
	}
	if len(set) > 0 {
		var ts *unix.Timespec
		if nearest >= 0 {
			t := unix.NsecToTimespec(int64(nearest))
			ts = &t
		}
		if _, err := w.p.Ppoll(set, ts); err != nil {
			return errnoOf(err)
		}
	} else if nearest > 0 {
		t := time.NewTimer(nearest)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	elapsed := time.Since(start)
	var k uint32
	put := func(ud uint64, errno uint16, typ uint8, nbytes uint64, flags uint16) {
		e := evs[k*eventSize : (k+1)*eventSize]
		clear(e)
		le.PutUint64(e, ud)
		le.PutUint16(e[8:], errno)
		e[10] = typ
		le.PutUint64(e[16:], nbytes)
		le.PutUint16(e[24:], flags)
		k++
	}
	for _, f := range fds {
		if f.slot < 0 {
			put(f.userdata, f.errno, f.typ, 0, 0)
			continue
		}
		re := set[f.slot].Revents
		switch {
		case re == 0:
		case re&unix.POLLNVAL != 0:
			put(f.userdata, uint16(errnoBadf), f.typ, 0, 0)
		default:
			var flags uint16
			if re&unix.POLLHUP != 0 {
				flags = eventFdHangup
			}
			put(f.userdata, 0, f.typ, w.available(set[f.slot].Fd, f.typ), flags)
		}
	}
	for _, c := range clocks {
		if c.deadline <= elapsed || c.errno != 0 {
			put(c.userdata, c.errno, eventClock, 0, 0)
		}
	}
	mem.WriteUint32Le(neventsPtr, k)
	return errnoSuccess
}

// available is fd_readwrite's nbytes: for reading a regular file, the
// bytes from the position to the end; otherwise 0 (unknown).
func (w *instance) available(fd int32, typ uint8) uint64 {
	if typ != eventFdRead {
		return 0
	}
	st, err := w.p.Fstat(int(fd))
	if err != nil || !st.IsRegular() {
		return 0
	}
	pos, err := w.p.Seek(int(fd), 0, unix.SEEK_CUR)
	if err != nil || pos >= st.Size {
		return 0
	}
	return uint64(st.Size - pos)
}
