// Package vfs is the process-facing API of iovfs: the file descriptor
// table, open-file objects, mounts, the path walk, and the dispatch of read
// and write calls to drivers.
//
// The driver contract is in ops.go. The calls follow Linux: flags and errno
// values are golang.org/x/sys/unix's, errors from descriptor calls are bare
// syscall.Errno values and errors from path calls are *fs.PathError
// wrapping one. Each system call family has its own file: read.go,
// write.go, seek.go, open.go, dup.go, stat.go.
package vfs

// Proc is a process: a file descriptor table and a view of a namespace.
// Its methods are safe for concurrent use.
type Proc struct {
	ns    *Namespace
	files fdTable
}

// NewProc returns a process with an empty descriptor table, in ns.
func NewProc(ns *Namespace) *Proc {
	p := &Proc{ns: ns}
	p.files.init()
	return p
}

// Namespace returns the namespace the process sees.
func (p *Proc) Namespace() *Namespace { return p.ns }
