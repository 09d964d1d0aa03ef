// Package tmpfs is an in-memory file system with the semantics of Linux's
// tmpfs (mm/shmem.c): regular files, directories and symbolic links, hard
// links, size and inode limits, holes, and timestamps kept as Linux keeps
// them (relatime included).
//
// New makes an instance from Options, which Parse reads from mount data
// such as "size=64m,mode=1777". Its nodes are *Dir, *File and *Symlink;
// File.Open returns an *OpenFile, the handle the VFS calls for reads,
// writes, appends and lseek. Open with O_TRUNC truncates the file itself;
// O_APPEND needs nothing from the file system, as the VFS sends those
// writes to OpenFile.Append.
//
// File data lives in 4 KiB pages held in a sparse radix tree (pages.go), so
// a write costs O(bytes written), holes take no memory and read as zeros,
// and SEEK_DATA/SEEK_HOLE report them. The size limit counts pages held,
// as Linux's does.
//
// # Locking
//
// Lock order, outermost first:
//
//  0. The VFS's locks (vfs.DirLock, embedded in each Dir, and the
//     namespace's rename locks): the VFS holds the locks of the
//     directories a namespace change touches for the whole call, and
//     serialises renames between directories, so tmpfs keeps no rename
//     mutex and checks no ancestry: its own locks below only keep its
//     maps and counts consistent for the readers that hold none of
//     those.
//  1. Dir.mu of the directories an operation changes: a parent before its
//     child (rmdir, rename over a directory); for a rename between two
//     directories, the lower inode number first (any fixed order does:
//     the VFS already excludes every other change of both).
//  2. inode.mu of the node whose link count or attributes change.
//  3. File.mu, the data lock of a regular file: shared for reads, exclusive
//     for writes and truncation.
//
// Lookup and ReadDir take their directory's lock shared, and no other. Read
// takes only File.mu shared, so readers of one file run in parallel; the
// attributes that every read and write touch (timestamps) are atomics,
// like the fields Linux's stat reads without i_rwsem. ReadDir calls its
// callback with no lock held. Timestamps come from clock.go, which reads
// the clock once per change and not at all for most reads.
package tmpfs

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Errors as error values made once, so returning one never allocates.
var (
	errEINVAL    error = unix.EINVAL
	errENOENT    error = unix.ENOENT
	errEEXIST    error = unix.EEXIST
	errENOSPC    error = unix.ENOSPC
	errEFBIG     error = unix.EFBIG
	errENXIO     error = unix.ENXIO
	errEISDIR    error = unix.EISDIR
	errENOTDIR   error = unix.ENOTDIR
	errENOTEMPTY error = unix.ENOTEMPTY
	errEXDEV     error = unix.EXDEV
	errEPERM     error = unix.EPERM
)

// maxFileSize is tmpfs's s_maxbytes, MAX_LFS_FILESIZE on 64-bit Linux.
const maxFileSize = math.MaxInt64

// Options configure a tmpfs instance. The zero value is an unlimited tmpfs
// whose root is mode 01777 and owned by uid 0, gid 0, as Linux mounts one.
type Options struct {
	// SizeLimit bounds the bytes of file data, counted in whole pages
	// allocated (rounded up to 4 KiB, as Linux's size= is). 0 is unlimited.
	SizeLimit int64
	// NrInodes bounds the number of inodes, the root included. 0 is
	// unlimited.
	NrInodes int64
	// Mode is the permission bits of the root directory, used when
	// ModeSet is true; otherwise the root is 01777.
	Mode    uint32
	ModeSet bool
	// Uid and Gid own the root directory.
	Uid, Gid uint32
}

// Parse reads tmpfs mount data, a comma-separated list of options as
// mount(8) passes them:
//
//	size=N       SizeLimit in bytes; N takes the suffixes k, m, g, t, p, e
//	             (powers of 1024, any case) and the prefixes 0x and 0, as
//	             Linux's memparse does; 0 is unlimited
//	nr_blocks=N  SizeLimit in 4 KiB pages
//	nr_inodes=N  NrInodes, same syntax as size
//	mode=OCTAL   root permission bits (masked with 07777, as Linux does)
//	uid=N, gid=N root owner
//
// inode32, inode64, noswap and huge=never|always|within_size|advise|deny|
// force are accepted and change nothing. Empty items are skipped. An unknown option, a missing or malformed value,
// or a size given as a percentage of RAM ("size=50%", which Linux accepts)
// gives EINVAL.
func Parse(data string) (Options, error) {
	var o Options
	for _, item := range strings.Split(data, ",") {
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		if !ok {
			switch key {
			case "inode64", "inode32", "noswap":
				continue // no effect here: inode numbers, swap
			}
			return Options{}, errEINVAL
		}
		switch key {
		case "huge":
			switch val {
			case "never", "always", "within_size", "advise", "deny", "force":
				continue // 4 KiB pages always; st_blocks is the same
			}
			return Options{}, errEINVAL
		case "size", "nr_blocks", "nr_inodes":
			n, err := memparse(val)
			if err != nil {
				return Options{}, err
			}
			switch key {
			case "size":
				o.SizeLimit = int64(n)
			case "nr_blocks":
				if n > math.MaxInt64/pageSize {
					return Options{}, errEINVAL
				}
				o.SizeLimit = int64(n) * pageSize
			case "nr_inodes":
				o.NrInodes = int64(n)
			}
		case "mode":
			m, err := strconv.ParseUint(val, 8, 32)
			if err != nil {
				return Options{}, errEINVAL
			}
			o.Mode, o.ModeSet = uint32(m)&0o7777, true
		case "uid", "gid":
			id, err := strconv.ParseUint(val, 10, 32)
			if err != nil || id == math.MaxUint32 { // (uid_t)-1 is no id
				return Options{}, errEINVAL
			}
			if key == "uid" {
				o.Uid = uint32(id)
			} else {
				o.Gid = uint32(id)
			}
		default:
			return Options{}, errEINVAL
		}
	}
	return o, nil
}

// memparse parses a number with an optional binary suffix, as Linux's
// lib/cmdline.c memparse does after simple_strtoull with base 0. The result
// fits in an int64.
func memparse(s string) (uint64, error) {
	base, digits := 10, s
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, digits = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	end := 0
	for end < len(digits) && isDigit(digits[end], base) {
		end++
	}
	if end == 0 && base != 8 { // "0" alone is octal 0
		return 0, errEINVAL
	}
	n := uint64(0)
	if end > 0 {
		var err error
		if n, err = strconv.ParseUint(digits[:end], base, 63); err != nil {
			return 0, errEINVAL
		}
	}
	rest := digits[end:]
	shift := 0
	if rest != "" {
		switch rest {
		case "k", "K":
			shift = 10
		case "m", "M":
			shift = 20
		case "g", "G":
			shift = 30
		case "t", "T":
			shift = 40
		case "p", "P":
			shift = 50
		case "e", "E":
			shift = 60
		default: // "%" and anything else
			return 0, errEINVAL
		}
	}
	if n > math.MaxInt64>>shift {
		return 0, errEINVAL
	}
	return n << shift, nil
}

func isDigit(c byte, base int) bool {
	switch {
	case c >= '0' && c <= '7':
		return true
	case c == '8' || c == '9':
		return base >= 10
	case base == 16:
		return c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
	}
	return false
}

// FS is one tmpfs instance. It implements vfs.FileSystem and is safe for
// concurrent use.
type FS struct {
	root      *Dir
	maxPages  int64 // 0: unlimited
	maxInodes int64 // 0: unlimited

	// pages and inodes count what is allocated, against the limits.
	pages   atomic.Int64
	inodes  atomic.Int64
	nextIno atomic.Uint64
	// xattrSpace is the inode space user xattrs take (xattr.go).
	xattrSpace atomic.Int64
	// table finds a live inode by number, for file handles (handles.go).
	table inodeTable
}

// New returns an empty tmpfs with the given options.
func New(opts Options) *FS {
	fs := &FS{
		maxPages:  (opts.SizeLimit + pageSize - 1) / pageSize,
		maxInodes: opts.NrInodes,
	}
	startClock()
	if opts.SizeLimit < 0 {
		fs.maxPages = 0
	}
	mode := uint32(0o1777)
	if opts.ModeSet {
		mode = opts.Mode & 0o7777
	}
	fs.inodes.Add(1)
	fs.root = fs.newDir(nil, mode, vfs.Cred{Uid: opts.Uid, Gid: opts.Gid}, clockNow())
	return fs
}

// Root implements vfs.FileSystem.
func (fs *FS) Root() vfs.Node { return fs.root }

// Usage reports the pages of file data and the inodes in use.
func (fs *FS) Usage() (pages, inodes int64) {
	return fs.pages.Load(), fs.inodes.Load()
}

// reservePage takes one page from the size limit; false means ENOSPC.
func (fs *FS) reservePage() bool {
	if fs.maxPages == 0 {
		fs.pages.Add(1)
		return true
	}
	for {
		n := fs.pages.Load()
		if n >= fs.maxPages {
			return false
		}
		if fs.pages.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (fs *FS) releasePages(n int64) {
	if n != 0 {
		fs.pages.Add(-n)
	}
}

// reserveInode takes one inode from nr_inodes; false means ENOSPC.
func (fs *FS) reserveInode() bool {
	if fs.maxInodes == 0 {
		fs.inodes.Add(1)
		return true
	}
	for {
		n := fs.inodes.Load()
		// shmem_reserve_inode: an inode takes BOGO_INODE_SIZE of the
		// inode space, which xattrs share.
		if (fs.maxInodes-n)*bogoInodeSize-fs.xattrSpace.Load() < bogoInodeSize {
			return false
		}
		if fs.inodes.CompareAndSwap(n, n+1) {
			return true
		}
	}
}
