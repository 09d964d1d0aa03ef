package tmpfs

import (
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// lockPair locks the maps of d and nd for a rename and returns the
// function that unlocks them. The VFS holds both directories' own locks
// and serialises renames between directories, so a fixed order (the
// lower inode number first) cannot deadlock.
func (d *Dir) lockPair(nd *Dir) func() {
	if nd == d {
		d.mu.Lock()
		return d.mu.Unlock
	}
	first, second := d, nd
	if nd.ino < d.ino {
		first, second = nd, d
	}
	first.mu.Lock()
	second.mu.Lock()
	return func() {
		second.mu.Unlock()
		first.mu.Unlock()
	}
}

// Rename implements vfs.Renamer, as shmem_rename2 does: a plain rename,
// RENAME_NOREPLACE, RENAME_EXCHANGE (simple_rename_exchange) and
// RENAME_WHITEOUT (shmem_whiteout: a character device 0:0 owned by c is
// left at oldName), the last with or without RENAME_NOREPLACE. newDir of
// another file system gives EXDEV.
func (d *Dir) Rename(oldName string, newDir vfs.Node, newName string, flags uint, c vfs.Cred) error {
	nd, ok := newDir.(*Dir)
	if !ok || nd.fs != d.fs {
		return errEXDEV
	}
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE|unix.RENAME_WHITEOUT) != 0 {
		return errEINVAL
	}
	unlock := d.lockPair(nd)
	if flags&unix.RENAME_EXCHANGE != 0 {
		err := d.exchangeLocked(oldName, nd, newName)
		unlock()
		return err
	}
	if flags&unix.RENAME_NOREPLACE != 0 && nd.names[newName] != nil {
		unlock()
		return errEEXIST
	}
	var ws *Special
	if flags&unix.RENAME_WHITEOUT != 0 {
		if d.names[oldName] == nil {
			unlock()
			return errENOENT
		}
		if !d.fs.reserveInode() {
			unlock()
			return errENOSPC
		}
		ws = &Special{}
		ws.init(d.fs, d, unix.S_IFCHR, c, clockNow())
	}
	var wsNode node
	if ws != nil {
		wsNode = ws
	}
	victim, done, err := d.renameLocked(oldName, nd, newName, wsNode)
	if ws != nil && !done {
		ws.evict()
	}
	unlock()
	if victim != nil {
		victim.free()
	}
	return err
}

// exchangeLocked swaps the nodes of oldName in d and newName in nd, with
// both locked: both must exist (ENOENT). A directory that changes parent
// moves its parent pointer and the subdirectory counts; both directories'
// mtime and ctime move, and both nodes' ctime. The VFS has refused an
// exchange that would move a directory below itself.
func (d *Dir) exchangeLocked(oldName string, nd *Dir, newName string) error {
	src, dst := d.names[oldName], nd.names[newName]
	if src == nil || dst == nil {
		return errENOENT
	}
	if src.node == dst.node {
		return nil
	}
	sd, srcIsDir := src.node.(*Dir)
	dd, dstIsDir := dst.node.(*Dir)
	src.node, dst.node = dst.node, src.node
	// simple_offset_rename_exchange and d_exchange: each name keeps its
	// offset, and both move to the head, oldName's first.
	d.toHead(src)
	nd.toHead(dst)
	d.compact()
	if nd != d {
		nd.compact()
	}
	if d != nd {
		if srcIsDir {
			sd.parent.Store(nd)
			d.subdirs--
			nd.subdirs++
		}
		if dstIsDir {
			dd.parent.Store(d)
			nd.subdirs--
			d.subdirs++
		}
	}
	now := clockNow().wall
	d.changed(now, true)
	nd.changed(now, true)
	src.node.base().changed(now, false)
	dst.node.base().changed(now, false)
	return nil
}
