package vfs

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Proc is a process: a file descriptor table, a current directory, a umask,
// credentials and a view of a namespace. Its methods are safe for
// concurrent use.
type Proc struct {
	ns *Namespace
	// files is the descriptor table, shared by the threads of a process
	// (NewThread); set once.
	files *fdTable
	// group is the process the Proc is a thread of, itself for a process:
	// the owner of its process-associated locks (thread.go). Set once.
	group *Proc
	// cwd is replaced whole by Chdir; the walk loads it once.
	cwd   atomic.Pointer[location]
	umask atomic.Uint32
	// cred is replaced whole by the set*id calls; a call loads it once.
	cred atomic.Pointer[creds]
	pid  int32 // set once by NewProc or Fork (newPid)
}

// lastPid is the last process id handed out by newPid.
var lastPid atomic.Int32

// newPid returns a new process id, unique in this Go process and positive:
// what F_GETLK reports as the owner of a process-associated lock.
func newPid() int32 { return lastPid.Add(1) }

// Pid returns the process's id, unique among the Procs of this Go process.
func (p *Proc) Pid() int { return int(p.pid) }

// NewProc returns a root process with an empty descriptor table, in ns,
// with the namespace root as its current directory and a umask of 022.
func NewProc(ns *Namespace) *Proc {
	p := &Proc{ns: ns, pid: newPid(), files: new(fdTable)}
	p.group = p
	p.files.init()
	p.cwd.Store(&location{ns.root, ns.root.root})
	p.umask.Store(0o022)
	p.cred.Store(rootCreds)
	return p
}

// Namespace returns the namespace the process sees.
func (p *Proc) Namespace() *Namespace { return p.ns }

// Umask sets the file mode creation mask and returns the previous one, as
// umask(2) does.
func (p *Proc) Umask(mask uint32) uint32 { return p.umask.Swap(mask & 0o777) }

// walk resolves path for this process, from its current directory.
func (p *Proc) walk(path string, follow bool) (location, error) {
	return p.walkAt(unix.AT_FDCWD, path, follow)
}
