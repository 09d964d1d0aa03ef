package fuse

import (
	"sync"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// POSIX record locks belong to a process; over FUSE the kernel names the
// process by a lock owner id in each request. Each lock owner gets a Proc
// of its own, with a table that holds nothing else, and each open file it
// locks through gets a descriptor in that Proc (vfs.Proc.Getfd of the
// handle's descriptor). So the vfs lock code sees exactly Linux's picture:
// one process, several descriptors of one file, locks that merge and
// split per process, that conflict with other owners, and that go away
// when the owner closes any descriptor of the file (FLUSH). flock locks
// belong to the open file, so they are taken on the handle's own
// descriptor; with Options.KernelFlock the kernel keeps them and never
// asks.
//
// An owner's descriptors are closed when it no longer needs them (FLUSH,
// RELEASE) or when the export ends (closeAll); one that a request is
// using (a wait for a lock) is closed when that request returns.
type lockOwners struct {
	ns *vfs.Namespace
	// mu protects owners and every owner's fields.
	mu     sync.Mutex
	owners map[uint64]*lockOwner
}

type lockOwner struct {
	p    *vfs.Proc
	fds  map[*handle]int // handle -> descriptor in p
	busy int             // requests using p
	// closing says the export has ended: the last request closes what
	// is left.
	closing bool
}

func (l *lockOwners) init(base *vfs.Proc) {
	l.ns = base.Namespace()
	l.owners = map[uint64]*lockOwner{}
}

// fd returns owner's Proc and its descriptor for handle h, for a request
// that ends with done(owner).
func (l *lockOwners) fd(owner uint64, h *handle, base *vfs.Proc) (*vfs.Proc, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.owners[owner]
	if o == nil {
		// A process of its own, with no descriptor but those it
		// locks through (a Fork of the server would copy every node
		// and open file, and keep them).
		o = &lockOwner{p: vfs.NewProc(l.ns), fds: map[*handle]int{}}
		l.owners[owner] = o
	}
	o.busy++
	if fd, ok := o.fds[h]; ok {
		return o.p, fd, nil
	}
	fd, err := o.p.Getfd(base, h.fd)
	if err != nil {
		l.doneLocked(owner, o)
		return nil, 0, err
	}
	o.fds[h] = fd
	return o.p, fd, nil
}

// done ends a request's use of owner's Proc.
func (l *lockOwners) done(owner uint64) {
	l.mu.Lock()
	o := l.owners[owner]
	var fds []int
	if o != nil {
		fds = l.doneLocked(owner, o)
	}
	l.mu.Unlock()
	for _, fd := range fds {
		o.p.Close(fd)
	}
}

// doneLocked is done under mu; it returns the descriptors to close.
func (l *lockOwners) doneLocked(owner uint64, o *lockOwner) []int {
	o.busy--
	if o.busy > 0 || !o.closing {
		return nil
	}
	delete(l.owners, owner)
	var fds []int
	for _, fd := range o.fds {
		fds = append(fds, fd)
	}
	return fds
}

// closeOwnerFile closes owner's descriptors of the file h is open on,
// which drops every POSIX lock the owner holds on that file, as a
// close(2) of any descriptor of it does (Linux's locks_remove_posix).
func (l *lockOwners) closeOwnerFile(owner uint64, h *handle) {
	var fds []int
	l.mu.Lock()
	o := l.owners[owner]
	if o != nil {
		for oh, fd := range o.fds {
			if oh.node == h.node {
				fds = append(fds, fd)
				delete(o.fds, oh)
			}
		}
		if len(o.fds) == 0 && o.busy == 0 {
			delete(l.owners, owner)
		}
	}
	l.mu.Unlock()
	for _, fd := range fds {
		o.p.Close(fd)
	}
}

// dropFile closes every lock owner's descriptor of h (RELEASE).
func (l *lockOwners) dropFile(h *handle) {
	type pfd struct {
		p  *vfs.Proc
		fd int
	}
	var cl []pfd
	l.mu.Lock()
	for id, o := range l.owners {
		if fd, ok := o.fds[h]; ok {
			cl = append(cl, pfd{o.p, fd})
			delete(o.fds, h)
			if len(o.fds) == 0 && o.busy == 0 {
				delete(l.owners, id)
			}
		}
	}
	l.mu.Unlock()
	for _, c := range cl {
		c.p.Close(c.fd)
	}
}

// closeAll closes every owner's descriptors, at the end of the export;
// those of an owner a request is using are closed when it returns. The
// locks they drop wake the requests that wait for them.
func (l *lockOwners) closeAll() {
	type pfd struct {
		p  *vfs.Proc
		fd int
	}
	var cl []pfd
	l.mu.Lock()
	for id, o := range l.owners {
		if o.busy > 0 {
			o.closing = true
			continue
		}
		for _, fd := range o.fds {
			cl = append(cl, pfd{o.p, fd})
		}
		delete(l.owners, id)
	}
	l.mu.Unlock()
	for _, c := range cl {
		c.p.Close(c.fd)
	}
}

func toFlock(lk *gofuse.FileLock) unix.Flock_t {
	fl := unix.Flock_t{Type: int16(lk.Typ), Whence: unix.SEEK_SET, Start: int64(lk.Start)}
	if lk.End != 1<<63-1 && lk.End != ^uint64(0) {
		fl.Len = int64(lk.End - lk.Start + 1)
	}
	return fl
}

func (r *rawFS) GetLk(cancel <-chan struct{}, in *gofuse.LkIn, out *gofuse.LkOut) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	defer r.s.putHandle(h)
	p, fd, err := r.s.locks.fd(in.Owner, h, r.s.base)
	if err != nil {
		return st(err)
	}
	defer r.s.locks.done(in.Owner)
	fl := toFlock(&in.Lk)
	if err := p.FcntlFlock(fd, unix.F_GETLK, &fl); err != nil {
		return st(err)
	}
	out.Lk.Typ = uint32(fl.Type)
	if fl.Type != unix.F_UNLCK {
		out.Lk.Start = uint64(fl.Start)
		out.Lk.End = 1<<63 - 1
		if fl.Len != 0 {
			out.Lk.End = uint64(fl.Start + fl.Len - 1)
		}
		// vfs pids are not host pids; the kernel shows 0 for a pid
		// it cannot map.
		out.Lk.Pid = 0
	}
	return gofuse.OK
}

func (r *rawFS) SetLk(cancel <-chan struct{}, in *gofuse.LkIn) gofuse.Status {
	return r.setLk(in, false)
}

func (r *rawFS) SetLkw(cancel <-chan struct{}, in *gofuse.LkIn) gofuse.Status {
	return r.setLk(in, true)
}

func (r *rawFS) setLk(in *gofuse.LkIn, wait bool) gofuse.Status {
	h := r.s.handle(in.Fh)
	if h == nil {
		return gofuse.EBADF
	}
	defer r.s.putHandle(h)
	if in.LkFlags&gofuse.FUSE_LK_FLOCK != 0 {
		how := unix.LOCK_UN
		switch in.Lk.Typ {
		case unix.F_RDLCK:
			how = unix.LOCK_SH
		case unix.F_WRLCK:
			how = unix.LOCK_EX
		}
		if !wait && how != unix.LOCK_UN {
			how |= unix.LOCK_NB
		}
		return st(r.s.base.Flock(h.fd, how))
	}
	p, fd, err := r.s.locks.fd(in.Owner, h, r.s.base)
	if err != nil {
		return st(err)
	}
	defer r.s.locks.done(in.Owner)
	fl := toFlock(&in.Lk)
	cmd := unix.F_SETLK
	if wait {
		cmd = unix.F_SETLKW
	}
	return st(p.FcntlFlock(fd, cmd, &fl))
}
