package vfs

import (
	"golang.org/x/sys/unix"
)

// Open opens the file at path and returns the lowest free descriptor, as
// open(2) does. flags are unix.O_* values; perm is used when a file is
// created. Errors are *fs.PathError wrapping a syscall.Errno.
func (p *Proc) Open(path string, flags int, perm uint32) (int, error) {
	f, err := p.openFile(path, flags, perm)
	if err != nil {
		return -1, pathErr("open", path, err)
	}
	fd, err := p.files.install(f, 0)
	if err != nil {
		f.release()
		return -1, pathErr("open", path, err)
	}
	return fd, nil
}

func (p *Proc) openFile(path string, flags int, perm uint32) (*file, error) {
	loc, err := p.ns.walk(location{p.ns.root, p.ns.root.root}, path, flags&unix.O_NOFOLLOW == 0)
	if err != nil {
		return nil, err
	}
	st, err := loc.node.Stat()
	if err != nil {
		return nil, err
	}
	acc := flags & unix.O_ACCMODE
	if st.IsDir() && (acc == unix.O_WRONLY || acc == unix.O_RDWR) {
		return nil, errEISDIR
	}
	if flags&unix.O_DIRECTORY != 0 && !st.IsDir() {
		return nil, errENOTDIR
	}
	if loc.mnt.readonly && (acc == unix.O_WRONLY || acc == unix.O_RDWR) {
		return nil, unix.EROFS
	}
	var h Handle = loc.node
	if o, ok := loc.node.(Opener); ok {
		if h, err = o.Open(flags); err != nil {
			return nil, err
		}
	} else if st.IsDir() {
		h = dirHandle{}
	}
	f := newFile(loc.node, h, flags)
	f.mnt = loc.mnt
	loc.mnt.openFiles.Add(1)
	return f, nil
}

// dirHandle is the handle of a directory that has no Opener: reads give
// EISDIR, as Linux's generic_read_dir does.
type dirHandle struct{}

func (dirHandle) Read([]byte, int64) (int, error) { return 0, errEISDIR }

// Close closes fd. The open file is released when its last descriptor is
// closed.
func (p *Proc) Close(fd int) error {
	f := p.files.remove(fd)
	if f == nil {
		return errEBADF
	}
	return f.release()
}
