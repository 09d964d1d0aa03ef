package vfs

// Opening a FIFO (Linux fs/pipe.c's fifo_open): the node made by mknod
// gets a pipe on its first open, which every later open shares, and which
// goes away, with any bytes still queued, when the last end is released
// (Linux keeps it in inode->i_pipe while pipe->files is non-zero).
//
// fifos.mu protects the map and every pipeObj.files; it is taken before a
// pipe's own lock, and never held while an open waits for its partner.

import (
	"sync"

	"github.com/iovfs/iovfs/pipe"
	"golang.org/x/sys/unix"
)

var fifos struct {
	mu sync.Mutex
	m  map[Node]*pipeObj
}

// openFIFO opens the FIFO at loc with open(2) flags: O_RDONLY waits for a
// writer unless O_NONBLOCK; O_WRONLY waits for a reader, or gives ENXIO
// with O_NONBLOCK; O_RDWR never waits. O_DIRECT gives EINVAL, after the
// open's wait, as do_dentry_open refuses it once fifo_open has run.
func (p *Proc) openFIFO(loc location, flags int) (*file, error) {
	fifos.mu.Lock()
	obj := fifos.m[loc.node]
	if obj == nil {
		if fifos.m == nil {
			fifos.m = make(map[Node]*pipeObj)
		}
		obj = newPipeObj(pipe.New())
		obj.fifo = loc.node
		fifos.m[loc.node] = obj
	}
	obj.files++
	fifos.mu.Unlock()

	var e *pipeEnd
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		e = newPipeEnd(obj, true, false)
	case unix.O_WRONLY:
		e = newPipeEnd(obj, false, true)
	case unix.O_RDWR:
		e = newPipeEnd(obj, true, true)
	default:
		dropFIFOFile(obj)
		return nil, errEINVAL
	}
	seen, err := obj.p.OpenFIFO(e.rd, e.wr, flags&unix.O_NONBLOCK != 0)
	if err != nil {
		dropFIFOFile(obj)
		return nil, err
	}
	e.seen = seen
	if flags&unix.O_DIRECT != 0 {
		releaseFIFOEnd(e)
		return nil, errEINVAL
	}
	e.setFlags(flags)
	f := newFile(loc.node, e, flags)
	f.mnt = loc.mnt
	f.loc = loc
	loc.mnt.openFiles.Add(1)
	return f, nil
}

// releaseFIFOEnd closes a FIFO end and drops the pipe with the last one.
func releaseFIFOEnd(e *pipeEnd) {
	fifos.mu.Lock()
	e.p.Close(e.rd, e.wr)
	e.obj.files--
	if e.obj.files == 0 {
		delete(fifos.m, e.obj.fifo)
	}
	fifos.mu.Unlock()
}

// dropFIFOFile undoes the files count of an open that failed before it
// became an end.
func dropFIFOFile(obj *pipeObj) {
	fifos.mu.Lock()
	obj.files--
	if obj.files == 0 {
		delete(fifos.m, obj.fifo)
	}
	fifos.mu.Unlock()
}
