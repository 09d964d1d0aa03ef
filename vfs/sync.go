package vfs

// fsync(2) and fdatasync(2) (Linux fs/sync.c: vfs_fsync_range).

import "golang.org/x/sys/unix"

// Fsync flushes fd's file to stable storage, as fsync(2) does: it calls
// the handle's Syncer (a loop device syncs its backing file, an imported
// host file is fsynced on the host). A regular file or directory whose
// driver has no Syncer has nothing to flush and returns nil, as tmpfs's
// noop_fsync; any other file without one (character devices, pipes,
// sockets) gives EINVAL, as Linux gives for a file without ->fsync. A
// descriptor that is not open gives EBADF. The access mode does not
// matter.
func (p *Proc) Fsync(fd int) error {
	f := p.fdget(fd)
	if f == nil {
		return errEBADF
	}
	if s, ok := f.h.(Syncer); ok {
		return s.Sync()
	}
	return f.noSync()
}

// Fdatasync is Fsync for the data and the metadata needed to read it
// back, as fdatasync(2): it calls the handle's DataSyncer, or else its
// Syncer, with Fsync's rules otherwise.
func (p *Proc) Fdatasync(fd int) error {
	f := p.fdget(fd)
	if f == nil {
		return errEBADF
	}
	if d, ok := f.h.(DataSyncer); ok {
		return d.Datasync()
	}
	if s, ok := f.h.(Syncer); ok {
		return s.Sync()
	}
	return f.noSync()
}

// noSync is the answer for a handle with no sync method.
func (f *file) noSync() error {
	st, err := f.stat()
	if err != nil {
		return err
	}
	if t := st.Mode & unix.S_IFMT; t == unix.S_IFREG || t == unix.S_IFDIR {
		return nil
	}
	return errEINVAL
}
