package ext4

// Parsed directory listings on a read-write mount (listcache.go has the
// listing itself): a directory keeps, after a getdents, its parsed
// entries, so later getdents take no lock and read no block. They are
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

import (
	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/ext4/disk"
)

// startListings sets up the listings' budget: bcache bytes (-1: the
// default for a device of devSize bytes; 0: none).
func (fs *rwFS) startListings(bcache, devSize int64) {
	if bcache == 0 {
		return
	}
	if bcache < 0 {
		bcache = block.DefaultCacheLimit(devSize)
	}
	fs.lcache, fs.listed = block.NewCache(bcache), map[uint32]*rwDir{}
	fs.w.OnDirChange(fs.dirChanged)
}

// listDir makes d's listing from inode in, under w.mu (v is the Writer's
// volume), or returns nil if d is listed from its blocks.
func (fs *rwFS) listDir(d *rwDir, v *disk.Volume, in *disk.Inode, gen uint64) *listing {
	fs.lists.misses.Add(1)
	if fs.lcache == nil || in.Flags&disk.FlagInlineData != 0 {
		return nil
	}
	dl, err := v.ParseList(in)
	if err != nil || dl.Cost() > fs.lcache.Limit() {
		return nil // the block path reports the error
	}
	l := &listing{l: dl, in: in, gen: gen}
	if l.ent = fs.lcache.Charge(uint64(d.ino), dl.Cost(), func() { fs.unlist(d, l) }); l.ent == nil {
		return nil
	}
	fs.lists.add(dl.Cost())
	d.list.Store(l)
	fs.listed[d.ino] = d
	return l
}

// unlist is listing l's eviction callback, under w.mu (every Charge and
// Uncharge of lcache is made under it).
func (fs *rwFS) unlist(d *rwDir, l *listing) {
	l.evicted.Store(true)
	d.list.CompareAndSwap(l, nil)
	if fs.listed[d.ino] == d {
		delete(fs.listed, d.ino)
	}
	fs.lists.drop(l.l.Cost())
}

// dirChanged is the Writer's onDirChange: it drops the listing of
// directory ino, or every listing for ino 0; w.mu is held.
func (fs *rwFS) dirChanged(ino uint32) {
	if ino != 0 {
		if d := fs.listed[ino]; d != nil {
			fs.uncharge(d)
		}
		return
	}
	for _, d := range fs.listed {
		fs.uncharge(d)
	}
}

// uncharge gives back d's listing, which unlist then drops.
func (fs *rwFS) uncharge(d *rwDir) {
	if l := d.list.Load(); l != nil {
		fs.lcache.Uncharge(l.ent)
	}
}

// ListingStats returns the mount's listing counters.
func (fs *rwFS) ListingStats() ListingStats {
	var limit int64
	if fs.lcache != nil {
		limit = fs.lcache.Limit()
	}
	return fs.lists.stats(limit)
}
