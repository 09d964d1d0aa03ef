// Package vfat is the VFS glue of the FAT file system with long names,
// Linux's "vfat": it mounts a fat.Volume (the on-disk layer, package
// fs/vfat/fat) from a block device and gives the VFS its nodes.
//
// FAT keeps no owners or permissions: as in Linux, every file belongs to
// the uid= and gid= of the mount (by default the mounting process's),
// its permission bits are 0777 less fmask= (files) or dmask= (directories)
// (both default to umask=, by default the mounting process's umask), and
// the read-only attribute takes the write bits away from a file. chmod
// may only toggle those write bits (other changes are ignored, as
// fat_sanitize_mode_change does); chown to another owner gives EPERM.
// Names are looked up without case (ASCII letters), trailing dots are
// dropped, and the 8.3 aliases are made as Linux's shortname=mixed makes
// them (package fat).
//
// Locking: the volume's mutex (package fat) protects the on-disk state;
// FS.mu protects the node table only. No driver lock is held while the
// other is taken.
package vfat

import (
	"fmt"
	"io"
	"log"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/vfat/fat"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
)

// Type is the file system type name the driver registers.
const Type = "vfat"

// msdosSuperMagic is statfs's f_type for FAT (MSDOS_SUPER_MAGIC).
const msdosSuperMagic = 0x4d44

type options struct {
	uid, gid     uint32
	fmask, dmask uint32
	quiet        bool
}

// parseOpts parses the mount options (fat_parse_param's subset):
// uid=, gid=, umask=, fmask=, dmask= (octal), quiet, and the accepted
// defaults shortname=mixed, utf8, iocharset=utf8|ascii, codepage=437,
// tz=UTC, flush, usefree, discard, rodir-less "ro"/"rw". Anything else
// gives EINVAL, as Linux's "Unrecognized mount option".
func parseOpts(data string, c vfs.Cred, umask uint32) (options, error) {
	o := options{uid: c.Uid, gid: c.Gid, fmask: umask, dmask: umask}
	bad := func(opt string) (options, error) {
		return o, fmt.Errorf("vfat: bad mount option %q: %w", opt, syscall.EINVAL)
	}
	for _, opt := range strings.Split(data, ",") {
		name, val, _ := strings.Cut(opt, "=")
		switch name {
		case "":
		case "uid", "gid":
			n, err := strconv.ParseUint(val, 10, 32)
			if err != nil {
				return bad(opt)
			}
			if name == "uid" {
				o.uid = uint32(n)
			} else {
				o.gid = uint32(n)
			}
		case "umask", "fmask", "dmask":
			n, err := strconv.ParseUint(val, 8, 32)
			if err != nil {
				return bad(opt)
			}
			switch name {
			case "umask":
				o.fmask, o.dmask = uint32(n)&0o777, uint32(n)&0o777
			case "fmask":
				o.fmask = uint32(n) & 0o777
			default:
				o.dmask = uint32(n) & 0o777
			}
		case "quiet":
			o.quiet = true
		case "shortname":
			if val != "mixed" {
				return bad(opt)
			}
		case "iocharset":
			if val != "utf8" && val != "ascii" {
				return bad(opt)
			}
		case "codepage":
			if val != "437" {
				return bad(opt)
			}
		case "tz":
			if val != "UTC" {
				return bad(opt)
			}
		case "utf8", "flush", "usefree", "discard", "ro", "rw", "noatime", "relatime", "nodiratime", "strictatime":
		default:
			return bad(opt)
		}
	}
	return o, nil
}

// FS is a mounted FAT volume. It implements vfs.FileSystem,
// vfs.Shutdowner and vfs.Statfser.
type FS struct {
	vol  *fat.Volume
	b    *vfs.Backing
	opts options
	ro   bool
	root *node

	// mu protects nodes and nextIno.
	mu      sync.Mutex
	nodes   map[*fat.Node]*node
	nextIno uint64

	shutdown sync.Once
}

// Mount is the vfs.MountFunc of vfat: req.Source is a block device,
// opened read-only with MS_RDONLY and read-write otherwise. A volume
// that was not cleanly unmounted is mounted with a warning to the
// standard logger, as Linux's "Volume was not properly unmounted".
func Mount(req vfs.MountRequest) (vfs.FileSystem, error) {
	return NewMountFunc(nil)(req)
}

// NewMountFunc returns a vfs.MountFunc like Mount whose warnings go to
// logf; nil means the standard logger.
func NewMountFunc(logf func(format string, args ...any)) vfs.MountFunc {
	return func(req vfs.MountRequest) (vfs.FileSystem, error) {
		if logf == nil {
			logf = func(format string, args ...any) {
				log.Printf("vfat (%s): "+format, append([]any{req.Source}, args...)...)
			}
		}
		return mount(req, logf)
	}
}

func mount(req vfs.MountRequest, logf func(string, ...any)) (vfs.FileSystem, error) {
	if req.Proc == nil {
		return nil, fmt.Errorf("vfat: mount of %s without a process to open it: %w", req.Source, syscall.EINVAL)
	}
	umask := req.Proc.Umask(0)
	req.Proc.Umask(umask)
	uid, _, _ := req.Proc.Getresuid()
	gid, _, _ := req.Proc.Getresgid()
	o, err := parseOpts(req.Data, vfs.Cred{Uid: uint32(uid), Gid: uint32(gid)}, umask)
	if err != nil {
		return nil, err
	}
	ro := req.Flags&unix.MS_RDONLY != 0
	flags := unix.O_RDWR
	if ro {
		flags = unix.O_RDONLY
	}
	fd, err := req.Proc.Open(req.Source, flags, 0)
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
		return nil, fmt.Errorf("vfat: %s is not a block device: %w", req.Source, syscall.ENOTBLK)
	}
	if !ro && dev.ReadOnly() {
		b.Release()
		return nil, fmt.Errorf("vfat: %s is write-protected: %w", req.Source, syscall.EACCES)
	}
	vol, err := fat.Open(&backingDevice{b: b, size: block.ReadEnd(dev)}, fat.Options{ReadOnly: ro})
	if err != nil {
		b.Release()
		if errorsIsNotFAT(err) {
			return nil, fmt.Errorf("vfat: can't find a valid FAT filesystem on %s: %w", req.Source, syscall.EINVAL)
		}
		return nil, err
	}
	if vol.WasDirty() && !ro {
		logf("Volume was not properly unmounted. Some data may be corrupt. Please run fsck.")
	}
	fs := &FS{vol: vol, b: b, opts: o, ro: ro, nodes: map[*fat.Node]*node{}, nextIno: 1}
	fs.root = fs.node(vol.Root())
	return fs, nil
}

func errorsIsNotFAT(err error) bool {
	for err != nil {
		if err == fat.ErrNotFAT {
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

// Root implements vfs.FileSystem.
func (fs *FS) Root() vfs.Node { return fs.root }

// Volume returns the on-disk volume.
func (fs *FS) Volume() *fat.Volume { return fs.vol }

// Shutdown implements vfs.Shutdowner: the volume is synced, its dirty
// bit cleared, and the device released.
func (fs *FS) Shutdown() error {
	var err error
	fs.shutdown.Do(func() {
		err = fs.vol.Close()
		if rerr := fs.b.Release(); err == nil {
			err = rerr
		}
	})
	return err
}

// Statfs implements vfs.Statfser (fat_statfs).
func (fs *FS) Statfs() (unix.Statfs_t, error) {
	in := fs.vol.Info()
	return unix.Statfs_t{
		Type:    msdosSuperMagic,
		Bsize:   int64(in.ClusterSize),
		Blocks:  uint64(in.Clusters),
		Bfree:   uint64(in.Free),
		Bavail:  uint64(in.Free),
		Namelen: 1530, // FAT_LFN_LEN * NLS_MAX_CHARSET_SIZE
		Frsize:  int64(in.ClusterSize),
		Fsid:    unix.Fsid{Val: [2]int32{int32(in.Serial), 0}},
	}, nil
}

// node returns the VFS node of n, one per fat.Node.
func (fs *FS) node(n *fat.Node) *node {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if x := fs.nodes[n]; x != nil {
		return x
	}
	x := &node{fs: fs, n: n, ino: fs.nextIno}
	fs.nextIno++
	fs.nodes[n] = x
	return x
}

// backingDevice is the fat.Device of a mount's source.
type backingDevice struct {
	b    *vfs.Backing
	size int64
}

func (d *backingDevice) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > d.size {
		return 0, io.ErrUnexpectedEOF
	}
	done := 0
	for done < len(p) {
		n, err := d.b.ReadAt(p[done:], off+int64(done))
		if err != nil || n == 0 {
			return done, syscall.EIO
		}
		done += n
	}
	return done, nil
}

func (d *backingDevice) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > d.size {
		return 0, syscall.EIO
	}
	done := 0
	for done < len(p) {
		n, err := d.b.WriteAt(p[done:], off+int64(done))
		if err != nil || n == 0 {
			return done, syscall.EIO
		}
		done += n
	}
	return done, nil
}

// WriteVecAt implements fat.VecWriter: one vectored write of the
// device (one pwritev of the image file behind a loop device).
func (d *backingDevice) WriteVecAt(bufs [][]byte, off int64) (int, error) {
	it := iov.Vec(bufs)
	total := it.Len()
	if off+int64(total) > d.size {
		return 0, syscall.EIO
	}
	done := 0
	for it.Len() > 0 {
		n, err := d.b.WriteIter(it, off+int64(done))
		if err != nil || n <= 0 {
			return done, syscall.EIO
		}
		done += n
		it.Advance(n)
	}
	return done, nil
}

func (d *backingDevice) Size() int64  { return d.size }
func (d *backingDevice) Flush() error { return d.b.Sync() }
