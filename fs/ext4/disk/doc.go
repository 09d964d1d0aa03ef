// Package disk is the on-disk layer of iovfs's ext4 driver: it reads
// ext2, ext3 and ext4 volumes from any Device (an io.ReaderAt with a size)
// and changes them through a Writer, whose journal is fs/jbd2's. It knows
// nothing of the VFS: the driver in fs/ext4 serves a Volume (read-only
// mounts) or a Writer (read-write mounts) through it.
//
// # Use
//
//	v, err := disk.Open(dev, disk.Options{Logf: log.Printf})
//	root, _ := v.Inode(v.Root())
//	ino, err := v.Lookup(root, "etc")       // htree-indexed when the directory is
//	dir, _ := v.Inode(ino)
//	err = v.ReadDir(dir, func(name []byte, ino uint32, ftype uint8) bool { ...; return true })
//	err = v.ReadDirFrom(dir, pos, fn)       // resumable listing for getdents
//	var c disk.ExtentCache                  // one per open file
//	n, err := v.ReadAt(file, &c, buf, off)  // pread(2) semantics: 0, nil at EOF
//
// # Data mapping and DAX
//
// MapBlocks turns a logical block into a Mapping: the whole extent (or run
// of consecutive block-map entries) holding it, or a hole. A DAX reader that
// sees the device as memory copies file bytes itself:
//
//	lblk := uint64(off) / bs
//	m, err := v.MapBlocks(in, &c, lblk)     // a bounds check when c covers lblk
//	within := uint64(off) - m.Logical*bs
//	n := min(len(p), m.Len*bs-within, in.Size-off)
//	if m.Hole || m.Unwritten { clear(p[:n]) } else { copy(p, mem[m.Physical*bs+within:][:n]) }
//
// and loops at the end of the run. Every mapped run lies inside the volume,
// which Open checked lies inside the device. Inline-data files, fast
// symlinks and special files have no blocks: MapBlocks returns ErrNoBlocks
// and ReadAt serves them.
//
// # Writing
//
// OpenWriter opens a volume read-write (see rw.go for the features it
// writes and refuses): Create, Mkdir, Symlink, Link, Unlink, Rmdir, Rename,
// WriteAt, Truncate, Setattr, with jbd2 transactions and recovery; each
// has an ...As form acting for a Caller (whom blocks are charged to). The
// VFS glue's read-write mount serves it.
//
// # Errors
//
// Damage is a *CorruptError whose Errno is syscall.EUCLEAN (Linux's
// EFSCORRUPTED) or, for a metadata_csum mismatch, syscall.EBADMSG (Linux's
// EFSBADCRC); errors.Is matches either errno. Unimplemented incompatible
// features make Open fail with a *FeatureError (EINVAL) naming them. Sizes
// and counts read from disk are checked against the device before they size
// an allocation, extent trees are at most 5 levels deep, block maps have a
// fixed depth, and directory walks visit each block once, so no image makes
// the reader panic, loop or allocate without bound.
//
// # Concurrency
//
// A Volume and the Inodes it returns may be used from many goroutines. An
// ExtentCache may not: keep one per open file (under that file's lock) or
// per goroutine.
package disk
