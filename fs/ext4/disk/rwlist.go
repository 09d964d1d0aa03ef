package disk

// Parsed directory listings on a read-write mount (listcache.go has the
// listing itself): the VFS glue keeps, for a directory, after a getdents,
// its parsed entries, so later getdents take no lock and read no block. They are
// exact: a listing is made under the Writer's lock, and the Writer drops
// it under the same lock (onDirChange) whenever it writes one of the
// directory's blocks (writeDirBlock: create, mkdir, mknod, symlink,
// link, unlink, rmdir, rename and exchange on either side, whiteouts,
// htree splits, an inline directory moved to a block), when it frees the
// directory (its inode number may come back as another directory), and
// all of them when errors=remount-ro drops the running transaction. An
// inline directory is listed from its inode. A getdents that loaded a
// listing before a change returns the entries from before it, as one
// that ran before the change would.
//
// Budget: bcache= (default a quarter of the device, at most 64 MiB;
// bcache=0 turns listings off), a block.Cache used for charges alone
// (the Writer reads no metadata through a buffer cache), which evicts
// listings by 2Q CLOCK.

// dirChanged tells the mount that directory ino changed (0: every
// directory); mu is held.
func (w *Writer) dirChanged(ino uint32) {
	if w.onDirChange != nil {
		w.onDirChange(ino)
	}
}

// OnDirChange sets fn to be called, under the Writer's lock, with the
// inode number of each directory whose blocks the Writer writes or that
// it frees, and with 0 when it drops the running transaction: a mount's
// parsed listings (the VFS glue's) stay exact by dropping them there.
func (w *Writer) OnDirChange(fn func(ino uint32)) {
	w.mu.Lock()
	w.onDirChange = fn
	w.mu.Unlock()
}
