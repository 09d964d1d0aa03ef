package ext4

// The VFS glue of a read-write mount: Mount without MS_RDONLY gives an
// rwFS whose nodes go through a Writer (rw.go). Every node reads the
// inode afresh under the Writer's lock, so nothing it shows is stale; the
// read-only mount's cached nodes and extent caches (mount.go, file.go)
// are not used, and the read-only path is unchanged.
//
// Invariants:
//   - nodes maps an inode number to its node while the inode exists; a
//     node is dropped when its inode is freed (unlink, rmdir, rename over
//     it, last close of an unlinked file).
//   - mu protects nodes only and is never held while calling the Writer.

import (
	"errors"
	"fmt"
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
)

// rwFS is a read-write mounted volume.
type rwFS struct {
	w  *disk.Writer
	b  *vfs.Backing
	bs uint64

	mu    sync.Mutex
	nodes map[uint32]vfs.Node

	// Parsed directory listings (rwlist.go): lcache is their budget
	// (bcache=), used only under w.mu, which also protects listed, the
	// directories holding one; nil without listings.
	lcache *block.Cache
	listed map[uint32]*rwDir
	lists  listCounters

	shutdown sync.Once
}

// backingWDevice is the Writer's device over the held-open source.
type backingWDevice struct{ backingDevice }

// Sync flushes the device's cache (EINVAL from a device without one is
// ignored by the caller).
func (d backingWDevice) Sync() error { return d.b.Sync() }

func (d backingWDevice) WriteAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := d.b.WriteAt(p[done:], off+int64(done))
		done += n
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, syscall.EIO
		}
	}
	return done, nil
}

// mountRW opens req.Source read-write and mounts it through a Writer.
// Options: those of Mount except the x-iovfs-read benchmarks (EINVAL);
// dax writes file data into device memory (rwdax.go).
func mountRW(req vfs.MountRequest, opts mountOpts, logf func(string, ...any)) (vfs.FileSystem, error) {
	if opts.path != ReadScalar {
		return nil, fmt.Errorf("ext4: x-iovfs-read needs a read-only mount: %w", syscall.EINVAL)
	}
	fd, err := req.Proc.Open(req.Source, unix.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	b, err := req.Proc.Backing(fd)
	req.Proc.Close(fd)
	if err != nil {
		return nil, err
	}
	dev, ok := block.Of(b.Handle())
	if !ok {
		b.Release()
		return nil, fmt.Errorf("ext4: %s is not a block device: %w", req.Source, syscall.ENOTBLK)
	}
	var da block.DirectAccessor
	var mem []byte
	if opts.dax {
		if da, mem, err = probeDAX(req.Source, dev); err != nil {
			b.Release()
			return nil, err
		}
	}
	w, err := disk.OpenWriter(backingWDevice{backingDevice{b: b, size: block.ReadEnd(dev)}}, disk.Options{Logf: logf, NoLoad: opts.noload, NoJournalChecksum: opts.noJCsum})
	if err == nil {
		if err = opts.checkJournalOpts(w.Journalled()); err != nil {
			w.Close()
		}
	}
	if err != nil {
		b.Release()
		return nil, err
	}
	w.Batch = true
	if opts.commit > 0 {
		w.CommitInterval = opts.commit
	}
	w.Data, w.Errors = opts.data, opts.errors
	w.MountPoint = req.Target
	if da != nil {
		w.UseDAX(da, mem)
	}
	w.StartCommitter()
	fs := &rwFS{w: w, b: b, bs: uint64(w.Volume().BlockSize()), nodes: map[uint32]vfs.Node{}}
	w.OnRelease(fs.released) // rwopenpath.go
	fs.startListings(opts.bcache, block.ReadEnd(dev))
	return fs, nil
}

// check passes a Writer error through, reporting damage to the Writer
// first (errors= behaviour, rwmodes.go); op is the kernel function that
// would find it, recorded in the superblock.
func (fs *rwFS) check(op string, err error) error {
	if err != nil {
		fs.w.ReportError(op, err)
	}
	return err
}

// Root implements vfs.FileSystem.
func (fs *rwFS) Root() vfs.Node {
	n, _ := fs.node(fs.w.Volume().Root(), disk.S_IFDIR)
	return n
}

// Writer returns the Writer under the mount.
func (fs *rwFS) Writer() *disk.Writer { return fs.w }

// Shutdown implements vfs.Shutdowner: it ends writing, flushes the device
// and releases it.
func (fs *rwFS) Shutdown() error {
	var err error
	fs.shutdown.Do(func() {
		err = fs.w.Close()
		if e := fs.b.Sync(); err == nil && e != nil && !errors.Is(e, syscall.EINVAL) {
			err = e
		}
		if e := fs.b.Release(); err == nil {
			err = e
		}
	})
	return err
}

// Statfs implements vfs.Statfser: ext4_statfs from the Writer's live
// counts (Writer.Statfs, rwspace.go).
func (fs *rwFS) Statfs() (unix.Statfs_t, error) {
	return fs.w.Statfs(), nil
}

// node returns inode ino's node, of the type mode gives.
func (fs *rwFS) node(ino uint32, mode uint32) (vfs.Node, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	want := mode & disk.S_IFMT
	if want != disk.S_IFDIR && want != disk.S_IFREG && want != disk.S_IFLNK {
		want = 0
	}
	if n := fs.nodes[ino]; n != nil && rwType(n) == want {
		return n, nil
	}
	// Absent (a freed inode's node leaves the table at once: released),
	// or of another type: a new node for the inode.
	var n vfs.Node
	var b *rwBase
	switch mode & disk.S_IFMT {
	case disk.S_IFDIR:
		d := &rwDir{}
		n, b = d, &d.rwBase
	case disk.S_IFREG:
		f := &rwFile{}
		n, b = f, &f.rwBase
	case disk.S_IFLNK:
		l := &rwLink{}
		n, b = l, &l.rwBase
	default:
		s := &rwSpecial{}
		n, b = s, &s.rwBase
	}
	b.fs, b.ino = fs, ino
	fs.nodes[ino] = n
	return n, nil
}

// rwType is the file type of a node made by node: S_IFDIR, S_IFREG,
// S_IFLNK, or 0 for the special files, whose type node does not split.
func rwType(n vfs.Node) uint32 {
	switch n.(type) {
	case *rwDir:
		return disk.S_IFDIR
	case *rwFile:
		return disk.S_IFREG
	case *rwLink:
		return disk.S_IFLNK
	}
	return 0
}

type rwBase struct {
	fs  *rwFS
	ino uint32
	// gone is set, under the Writer's lock, when the inode is freed
	// (rwopenpath.go).
	gone atomic.Bool
}

// Stat implements vfs.Node.
func (n *rwBase) Stat() (vfs.Stat, error) {
	var st vfs.Stat
	err := n.fs.w.ViewInode(n.ino, n.alive, func(v *disk.Volume, in *disk.Inode) error {
		st = vfs.Stat{
			Ino: uint64(in.Ino), Mode: in.Mode, Nlink: uint64(in.Nlink),
			Uid: in.Uid, Gid: in.Gid, Rdev: in.Rdev, Size: int64(in.Size),
			Blksize: int64(n.fs.bs), Blocks: int64(in.Blocks),
			Atime: ts(in.Atime), Mtime: ts(in.Mtime), Ctime: ts(in.Ctime),
		}
		if in.HasCrtime {
			st.Btime = ts(in.Crtime)
		}
		return nil
	})
	return st, n.fs.check("ext4_getattr", err)
}

// Setattr implements vfs.Setattrer; a truncate acts for c.
func (n *rwBase) Setattr(a vfs.SetAttr, c vfs.Cred) error {
	if err := n.pin(); err != nil {
		return err
	}
	defer n.fs.unhold(n.ino)
	w := n.fs.w
	if a.Valid&vfs.SetSize != 0 {
		cl := callerOf(c)
		if err := w.TruncateAs(&cl, n.ino, a.Size); err != nil {
			return n.fs.check("ext4_setattr", err)
		}
	}
	var x disk.Attr
	if a.Valid&vfs.SetMode != 0 {
		x.Valid |= disk.AttrMode
		x.Mode = a.Mode
	}
	if a.Valid&vfs.SetUid != 0 {
		x.Valid |= disk.AttrUid
		x.Uid = a.Uid
	}
	if a.Valid&vfs.SetGid != 0 {
		x.Valid |= disk.AttrGid
		x.Gid = a.Gid
	}
	if a.Valid&vfs.SetAtime != 0 {
		x.Valid |= disk.AttrAtime
		x.Atime = a.Atime
	}
	if a.Valid&vfs.SetMtime != 0 {
		x.Valid |= disk.AttrMtime
		x.Mtime = a.Mtime
	}
	if x.Valid == 0 && a.Valid&vfs.SetSize != 0 {
		return nil
	}
	return n.fs.check("ext4_setattr", w.Setattr(n.ino, x))
}

// Getxattr implements vfs.Xattrer.
func (n *rwBase) Getxattr(name string) ([]byte, error) {
	if err := n.pin(); err != nil {
		return nil, err
	}
	defer n.fs.unhold(n.ino)
	b, err := n.fs.w.Getxattr(n.ino, name)
	return b, n.fs.check("ext4_xattr_get", err)
}

// Listxattr implements vfs.Xattrer.
func (n *rwBase) Listxattr() ([]string, error) {
	if err := n.pin(); err != nil {
		return nil, err
	}
	defer n.fs.unhold(n.ino)
	l, err := n.fs.w.Listxattr(n.ino)
	return l, n.fs.check("ext4_listxattr", err)
}

type rwDir struct {
	rwBase
	list atomic.Pointer[listing] // rwlist.go
	// dl is the VFS's lock of the directory (vfs.DirLocker); node keeps
	// one rwDir per directory inode while it exists, so the lock is the
	// directory's.
	dl vfs.DirLock
}

// FileType implements vfs.FileTyper.
func (*rwDir) FileType() uint32 { return disk.S_IFDIR }

// DirLock implements vfs.DirLocker.
func (d *rwDir) DirLock() *vfs.DirLock { return &d.dl }

// Lookup implements vfs.Lookuper, through the Writer's name index.
func (d *rwDir) Lookup(name string) (vfs.Node, error) {
	ino, mode, err := d.fs.w.Lookup(d.ino, name, d.alive)
	if err != nil {
		return nil, d.fs.check("ext4_lookup", err)
	}
	return d.fs.node(ino, mode)
}

// ReadDir implements vfs.DirReader, for the VFS's own walks (getdents
// goes through the open directory's handle, dirhandle.go), with the
// kernel's positions as cookies; from the directory's listing when it
// has one (rwlist.go).
func (d *rwDir) ReadDir(off int64, fn func(vfs.Dirent) bool) error {
	if off < 3 {
		off = 0
	}
	if l := d.list.Load(); l != nil {
		d.fs.lists.hits.Add(1)
		l.ent.Touch()
		l.read(off, fn)
		return nil
	}
	return d.fs.check("ext4_readdir", d.fs.w.ViewDir(d.ino, func(v *disk.Volume, in *disk.Inode, gen uint64) error {
		if l := d.fs.listDir(d, v, in, gen); l != nil {
			l.read(off, fn)
			return nil
		}
		return v.ReadDirFrom(in, off, func(name []byte, ino uint32, ft uint8, next int64) bool {
			return fn(vfs.Dirent{Name: string(name), Ino: uint64(ino), Type: disk.DType(ft), Off: next})
		})
	}))
}

// Create implements vfs.Creator.
func (d *rwDir) Create(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	cl := callerOf(c)
	ino, err := d.fs.w.CreateAs(&cl, d.ino, name, mode, c.Uid, c.Gid)
	if err != nil {
		return nil, d.fs.check("ext4_create", err)
	}
	return d.fs.node(ino, disk.S_IFREG)
}

// Mkdir implements vfs.Mkdirer.
func (d *rwDir) Mkdir(name string, mode uint32, c vfs.Cred) (vfs.Node, error) {
	cl := callerOf(c)
	ino, err := d.fs.w.MkdirAs(&cl, d.ino, name, mode, c.Uid, c.Gid)
	if err != nil {
		return nil, d.fs.check("ext4_mkdir", err)
	}
	return d.fs.node(ino, disk.S_IFDIR)
}

// Symlink implements vfs.Symlinker.
func (d *rwDir) Symlink(name, target string, c vfs.Cred) (vfs.Node, error) {
	cl := callerOf(c)
	ino, err := d.fs.w.SymlinkAs(&cl, d.ino, name, target, c.Uid, c.Gid)
	if err != nil {
		return nil, d.fs.check("ext4_symlink", err)
	}
	return d.fs.node(ino, disk.S_IFLNK)
}

func inoOf(n vfs.Node) (uint32, bool) {
	switch x := n.(type) {
	case *rwFile:
		return x.ino, true
	case *rwLink:
		return x.ino, true
	case *rwSpecial:
		return x.ino, true
	case *rwDir:
		return x.ino, true
	}
	return 0, false
}

// Link implements vfs.Linker: a new directory block is charged to c.
func (d *rwDir) Link(name string, target vfs.Node, c vfs.Cred) error {
	ino, ok := inoOf(target)
	if !ok {
		return syscall.EXDEV
	}
	if err := baseOf(target).pin(); err != nil {
		return err // vfs_link: the target's last link went meanwhile
	}
	defer d.fs.unhold(ino)
	cl := callerOf(c)
	return d.fs.check("ext4_link", d.fs.w.LinkAs(&cl, d.ino, name, ino))
}

// lookupIno is the inode name names in d, 0 if none.
func (d *rwDir) lookupIno(name string) uint32 {
	ino, _, _ := d.fs.w.Lookup(d.ino, name, nil)
	return ino
}

// Unlink implements vfs.Unlinker.
func (d *rwDir) Unlink(name string, _ vfs.Cred) error {
	return d.fs.check("ext4_unlink", d.fs.w.Unlink(d.ino, name))
}

// Rmdir implements vfs.Rmdirer.
func (d *rwDir) Rmdir(name string, _ vfs.Cred) error {
	return d.fs.check("ext4_rmdir", d.fs.w.Rmdir(d.ino, name))
}

// rename is a plain rename acting for c.
func (d *rwDir) rename(c *disk.Caller, oldName string, nd *rwDir, newName string) error {
	return d.fs.check("ext4_rename", d.fs.w.RenameAs(c, d.ino, oldName, nd.ino, newName))
}

// Rename implements vfs.Renamer, flags 0, RENAME_NOREPLACE,
// RENAME_EXCHANGE and RENAME_WHITEOUT (with or without NOREPLACE) among
// them, acting for c (a directory block it adds is charged to c).
func (d *rwDir) Rename(oldName string, newDir vfs.Node, newName string, flags uint, c vfs.Cred) error {
	nd, ok := newDir.(*rwDir)
	if !ok {
		return syscall.EXDEV
	}
	cl := callerOf(c)
	switch flags {
	case 0:
		return d.rename(&cl, oldName, nd, newName)
	case unix.RENAME_NOREPLACE:
		if nd.lookupIno(newName) != 0 {
			if d.lookupIno(oldName) == 0 {
				return syscall.ENOENT
			}
			return syscall.EEXIST
		}
		return d.rename(&cl, oldName, nd, newName)
	case unix.RENAME_EXCHANGE:
		return d.fs.check("ext4_rename", d.fs.w.ExchangeAs(&cl, d.ino, oldName, nd.ino, newName))
	case unix.RENAME_WHITEOUT, unix.RENAME_WHITEOUT | unix.RENAME_NOREPLACE:
		return d.fs.check("ext4_rename", d.renameWhiteout(oldName, nd, newName, flags, c))
	}
	return syscall.EINVAL
}

type rwLink struct{ rwBase }

// FileType implements vfs.FileTyper.
func (*rwLink) FileType() uint32 { return disk.S_IFLNK }

// Readlink implements vfs.Readlinker.
func (l *rwLink) Readlink() (string, error) {
	if err := l.pin(); err != nil {
		return "", err
	}
	defer l.fs.unhold(l.ino)
	s, err := l.fs.w.Readlink(l.ino)
	return s, l.fs.check("ext4_readlink", err)
}

type rwSpecial struct{ rwBase }

type rwFile struct{ rwBase }

// FileType implements vfs.FileTyper.
func (*rwFile) FileType() uint32 { return disk.S_IFREG }

// Open implements vfs.Opener: the handle holds the inode, so an unlink
// while it is open keeps the blocks until Release. Its writes and appends
// act for c, the opener (only a caller that may take the blocks reserved
// for root gets them).
func (f *rwFile) Open(flags int, c vfs.Cred) (vfs.Handle, error) {
	f.fs.w.SampleLastMounted() // rwsuper.go
	if err := f.pin(); err != nil {
		return nil, err
	}
	h := &rwHandle{fs: f.fs, ino: f.ino, caller: callerOf(c)}
	h.as = &h.caller
	return h, nil
}

// rwHandle is an open regular file of a read-write mount.
type rwHandle struct {
	fs  *rwFS
	ino uint32
	// as is who writes act for: &caller, the opener. Both are set at
	// open and never change.
	as     *disk.Caller
	caller disk.Caller
}

// Read implements vfs.Reader.
func (h *rwHandle) Read(p []byte, off int64) (int, error) {
	n, err := h.fs.w.ReadAt(h.ino, p, off)
	return n, h.fs.check("ext4_file_read_iter", err)
}

// Write implements vfs.Writer.
func (h *rwHandle) Write(p []byte, off int64) (int, error) {
	n, err := h.fs.w.WriteAtAs(h.as, h.ino, p, off)
	return n, h.fs.check("ext4_file_write_iter", err)
}

// WriteIter implements vfs.IterWriter: one WriteAt per segment, stopping
// at a short one.
func (h *rwHandle) WriteIter(src iov.Iter, off int64) (int, error) {
	done := 0
	for src.Len() > 0 {
		seg := src.Segment()
		n, err := h.fs.w.WriteAtAs(h.as, h.ino, seg, off+int64(done))
		done += n
		if err != nil || n < len(seg) {
			if done > 0 {
				return done, nil
			}
			return 0, h.fs.check("ext4_file_write_iter", err)
		}
		src.Advance(n)
	}
	return done, nil
}

// Append implements vfs.Appender. A single segment is written from the
// caller's buffer, without a copy.
func (h *rwHandle) Append(src iov.Iter) (int64, int, error) {
	if seg := src.Segment(); len(seg) == src.Len() {
		return h.fs.w.AppendAs(h.as, h.ino, seg)
	}
	p := make([]byte, src.Len())
	src.CopyIn(p)
	off, n, err := h.fs.w.AppendAs(h.as, h.ino, p)
	return off, n, h.fs.check("ext4_file_write_iter", err)
}

// Fallocate implements vfs.Fallocater (rwfalloc.go), acting for c.
func (h *rwHandle) Fallocate(mode uint32, off, length int64, c vfs.Cred) error {
	cl := callerOf(c)
	return h.fs.check("ext4_fallocate", h.fs.w.FallocateAs(&cl, h.ino, mode, off, length))
}

// Sync implements vfs.Syncer: it commits the running transaction (which
// holds every change made so far, as ext4's fsync forces a commit) and
// flushes the device.
func (h *rwHandle) Sync() error { return h.fs.w.Sync() }

// Datasync implements vfs.DataSyncer, as Sync.
func (h *rwHandle) Datasync() error { return h.fs.w.Sync() }

// Release implements vfs.Releaser.
func (h *rwHandle) Release() error { return h.fs.unhold(h.ino) }
