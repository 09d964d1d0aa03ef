// Package wasi is a wasi_snapshot_preview1 host module for wazero whose
// file functions run on a *vfs.Proc: the guest's descriptor table is the
// process's, and every fd_* and path_* call, poll_oneoff and
// sock_shutdown, is one or a few calls of that process. The remaining
// functions (args, environ, clocks, random_get, proc_exit, proc_raise,
// sched_yield, sock_accept, sock_recv, sock_send) are wazero's own, taken
// from the module config.
//
// fd_read, fd_pread, fd_write and fd_pwrite turn the guest's iovec array
// into [][]byte slices over guest memory and make exactly one Readv,
// Preadv, Writev or Pwritev call: no copy, no allocation once warm, and the
// count of a partial transfer is kept, as readv(2) keeps it.
//
// Confinement: path_open and every other path function resolve beneath
// the directory descriptor they are given with Openat2's RESOLVE_BENEATH
// (RESOLVE_IN_ROOT in a preopen the guest calls "/"), so neither "..", an
// absolute path nor a symlink leads a guest out of its preopens. An
// attempt to leave gives WASI's ENOTCAPABLE.
//
// Errors are Linux's errnos, as the process returns them, mapped one to
// one to WASI's (errno.go).
package wasi

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/iovfs/iovfs/vfs"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"golang.org/x/sys/unix"
)

// ModuleName is the import module the functions are exported under.
const ModuleName = wasi_snapshot_preview1.ModuleName

// A Preopen is a directory of the process's namespace handed to the guest.
type Preopen struct {
	// Path is the directory in the process's namespace.
	Path string
	// Guest is the name fd_prestat_dir_name reports for it ("/", "/data");
	// empty means Path.
	Guest string
}

// Config says what the guest sees besides the process's open descriptors.
type Config struct {
	// Preopens are opened, in order, with O_RDONLY|O_DIRECTORY, at the
	// lowest free descriptors: 3, 4... when the process has exactly its
	// standard descriptors 0, 1 and 2 open, as WASI expects.
	Preopens []Preopen
	// SigPipe makes a write that fails with EPIPE (fd_write, fd_pwrite to
	// a pipe without readers) end the guest with exit code 128+13, as
	// SIGPIPE's default action ends a Linux process: WASI has no
	// signals, and a guest that ignores the error would otherwise write
	// forever ("yes | head").
	SigPipe bool
}

// Instantiate opens cfg's preopens in p and instantiates the module
// wasi_snapshot_preview1 in r, bound to p. Guest modules instantiated in r
// afterwards import it; their args, environment, clocks and random source
// come from their own wazero.ModuleConfig, their files from p (the
// config's stdin, stdout, stderr and FS settings are not used). Descriptors
// the guest opens stay in p after the guest exits; closing the returned
// module does not close them.
//
// One wasi module serves the guests of one runtime; r must not already
// hold a module called wasi_snapshot_preview1.
func Instantiate(ctx context.Context, r wazero.Runtime, p *vfs.Proc, cfg Config) (api.Closer, error) {
	w, err := newInstance(p, cfg)
	if err != nil {
		return nil, err
	}
	b := r.NewHostModuleBuilder(ModuleName)
	w.export(b)
	m, err := b.Instantiate(ctx)
	if err != nil {
		w.closePreopens()
		return nil, err
	}
	return m, nil
}

// newInstance opens the preopens and records the rights of the
// descriptors already open.
func newInstance(p *vfs.Proc, cfg Config) (*instance, error) {
	w := &instance{p: p, sigpipe: cfg.SigPipe}
	for _, po := range cfg.Preopens {
		fd, err := p.Open(po.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			w.closePreopens()
			return nil, fmt.Errorf("wasi: preopen: %w", err)
		}
		name := po.Guest
		if name == "" {
			name = po.Path
		}
		w.setEntry(fd, fdEntry{base: dirRights, inherit: allRights, preopen: name, isPreopen: true, isRoot: name == "/", known: true})
	}
	return w, nil
}

func (w *instance) closePreopens() {
	var fds []int
	if p := w.fds.Load(); p != nil {
		for fd, e := range *p {
			if e.isPreopen {
				fds = append(fds, fd)
			}
		}
	}
	for _, fd := range fds {
		w.p.Close(fd)
	}
}

// instance is the state of one wasi module: the process and, per
// descriptor, the WASI rights and preopen name that the process does not
// keep.
type instance struct {
	p       *vfs.Proc
	sigpipe bool // Config.SigPipe
	// done is the guest's context's Done channel, for the guests of
	// InstantiateShared (nil otherwise): a call after it closes ends the
	// guest.
	done <-chan struct{}

	// fds is indexed by descriptor. Lookups (every call) load it without
	// a lock; changes copy it under mu and store the copy.
	mu  sync.Mutex
	fds atomic.Pointer[[]fdEntry]

	// scratch is a [][]byte reused by the read and write functions, so an
	// fd_read allocates nothing once warm. busy says a call is using it;
	// a concurrent call that finds it busy makes its own.
	busy    atomic.Bool
	scratch [][]byte
}

// fdEntry is what WASI tracks for a descriptor beyond the process's open
// file.
type fdEntry struct {
	base, inherit uint64
	preopen       string
	isPreopen     bool
	// isRoot marks a preopen named "/": paths resolve in it as in a root.
	isRoot bool
	// known is false for a descriptor the guest did not get from this
	// module (the standard descriptors, ones the embedder opened): those
	// have every right their file type allows.
	known bool
}

// entry returns fd's entry, or the zero entry.
func (w *instance) entry(fd int32) fdEntry {
	if e := w.entryRef(fd); e != nil {
		return *e
	}
	return fdEntry{}
}

// entryRef returns a pointer into the current table, or nil; the entry
// must not be changed.
func (w *instance) entryRef(fd int32) *fdEntry {
	p := w.fds.Load()
	if p == nil || fd < 0 || int(fd) >= len(*p) {
		return nil
	}
	return &(*p)[fd]
}

func (w *instance) setEntry(fd int, e fdEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var old []fdEntry
	if p := w.fds.Load(); p != nil {
		old = *p
	}
	n := make([]fdEntry, max(len(old), fd+1))
	copy(n, old)
	n[fd] = e
	w.fds.Store(&n)
}

func (w *instance) clearEntry(fd int) { w.setEntry(fd, fdEntry{}) }

// check returns 0 if fd may make a call that needs rights, ENOTCAPABLE if
// it lacks one. A descriptor the module did not open passes; the process
// answers EBADF for one that is not open.
func (w *instance) check(fd int32, rights uint64) uint32 {
	if fd < 0 {
		return errnoBadf
	}
	if e := w.entryRef(fd); e != nil && e.known && e.base&rights != rights {
		return errnoNotcapable
	}
	return errnoSuccess
}

// getScratch returns a [][]byte of n segments: the instance's own when no
// other call is using it, else a new one.
func (w *instance) getScratch(n int) ([][]byte, bool) {
	if !w.busy.CompareAndSwap(false, true) {
		return make([][]byte, n), false
	}
	if cap(w.scratch) < n {
		w.scratch = make([][]byte, n, max(n, 16))
	}
	return w.scratch[:n], true
}

// putScratch drops the segments' references to guest memory and, if s
// is the instance's own, frees it for the next call.
func (w *instance) putScratch(s [][]byte, own bool) {
	clear(s)
	if own {
		w.busy.Store(false)
	}
}
