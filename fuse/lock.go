package fuse

import (
	"sync"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// POSIX record locks belong to a process; over FUSE the kernel names the
// process by a lock owner id in each request. Each lock owner gets a Proc
// of its own, and each open file it locks through gets a descriptor in
// that Proc (vfs.Proc.Getfd of the handle's descriptor). So the vfs lock
// code sees exactly Linux's picture: one process, several descriptors of
// one file, locks that merge and split per process, that conflict with
// other owners, and that go away when the owner closes any descriptor of
// the file (FLUSH). flock locks belong to the open file, so they are taken
// on the handle's own descriptor.
type lockOwners struct {
	base *vfs.Proc
	// mu protects owners and each owner's fds.
	mu     sync.Mutex
	owners map[uint64]*lockOwner
}

type lockOwner struct {
	p   *vfs.Proc
	fds map[uint64]ownerFd // FUSE file handle -> descriptor in p
}

type ownerFd struct {
	fd   int
	node *node // the node the handle is open on
}

func (l *lockOwners) init(base *vfs.Proc) {
	l.base = base
	l.owners = map[uint64]*lockOwner{}
}

// fd returns owner's Proc and its descriptor for handle fh.
func (l *lockOwners) fd(owner, fh uint64, h *handle) (*vfs.Proc, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.owners[owner]
	if o == nil {
		p, err := l.base.Fork()
		if err != nil {
			return nil, 0, err
		}
		o = &lockOwner{p: p, fds: map[uint64]ownerFd{}}
		l.owners[owner] = o
	}
	if of, ok := o.fds[fh]; ok {
		return o.p, of.fd, nil
	}
	fd, err := o.p.Getfd(h.p, h.fd)
	if err != nil {
		return nil, 0, err
	}
	o.fds[fh] = ownerFd{fd, h.node}
	return o.p, fd, nil
}

// closeOwnerFile closes owner's descriptors of the file h is open on,
// which drops every POSIX lock the owner holds on that file, as a
// close(2) of any descriptor of it does (Linux's locks_remove_posix).
func (l *lockOwners) closeOwnerFile(owner uint64, h *handle) {
	if h == nil || h.node == nil {
		return
	}
	var fds []int
	l.mu.Lock()
	o := l.owners[owner]
	if o != nil {
		for fh, of := range o.fds {
			if of.node == h.node {
				fds = append(fds, of.fd)
				delete(o.fds, fh)
			}
		}
		if len(o.fds) == 0 {
			delete(l.owners, owner)
		}
	}
	l.mu.Unlock()
	for _, fd := range fds {
		o.p.Close(fd)
	}
}

// dropFile closes every lock owner's descriptor of fh (RELEASE).
func (l *lockOwners) dropFile(fh uint64) {
	type pfd struct {
		p  *vfs.Proc
		fd int
	}
	var cl []pfd
	l.mu.Lock()
	for id, o := range l.owners {
		if of, ok := o.fds[fh]; ok {
			cl = append(cl, pfd{o.p, of.fd})
			delete(o.fds, fh)
			if len(o.fds) == 0 {
				delete(l.owners, id)
			}
		}
	}
	l.mu.Unlock()
	for _, c := range cl {
		c.p.Close(c.fd)
	}
}

func (l *lockOwners) closeAll() {
	l.mu.Lock()
	os := l.owners
	l.owners = map[uint64]*lockOwner{}
	l.mu.Unlock()
	for _, o := range os {
		for _, of := range o.fds {
			o.p.Close(of.fd)
		}
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
	p, fd, err := r.s.locks.fd(in.Owner, in.Fh, h)
	if err != nil {
		return st(err)
	}
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
		return st(h.p.Flock(h.fd, how))
	}
	p, fd, err := r.s.locks.fd(in.Owner, in.Fh, h)
	if err != nil {
		return st(err)
	}
	fl := toFlock(&in.Lk)
	cmd := unix.F_SETLK
	if wait {
		cmd = unix.F_SETLKW
	}
	return st(p.FcntlFlock(fd, cmd, &fl))
}
