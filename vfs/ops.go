package vfs

// This file holds the contract between the VFS and the drivers below it:
// device drivers, file systems and block devices. The interfaces that
// belong to one syscall family live beside it: Lookuper and Readlinker
// (walk.go), FileSystem and Shutdowner (mount.go), Tmpfiler (tmpfile.go),
// NoatimeHandle (noatime.go), SpliceReader, NoSpliceReader,
// NoSpliceWriter and Discarder (splice.go). Every interface is small and
// optional; the VFS finds out at open which ones a node or handle
// implements and stores what it will call (see file.go), so no read or
// write repeats a type assertion.

import (
	"time"

	"github.com/iovfs/iovfs/iov"
	"golang.org/x/sys/unix"
)

// A Node is one object in a file system: a file, directory, symlink or
// device (an inode). Nodes are compared with ==, so a file system must hand
// out the same Node value for the same object while it is in use; pointer
// types do this naturally.
type Node interface {
	// Stat reports the node's metadata. Dev is filled in by the VFS when
	// the file system leaves it zero.
	Stat() (Stat, error)
}

// An Opener is a Node that can be opened (Linux's .open). flags are the
// open(2) flags (unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR and
// modifiers); c is the opening process's credentials. Open returns the
// handle that later calls go to. A handle that needs no state may be the
// node itself.
//
// The VFS holds no lock when it calls Open. It has resolved the path,
// checked the caller's permission for the access mode (generic_permission,
// so a driver never checks modes), the access mode against the node's
// type (EISDIR for writing a directory) and the mount (EROFS), and
// O_NOATIME's ownership rule. The driver answers what depends on its own
// state (ENXIO for a device without a driver, EBUSY for an exclusive one).
//
// A handle that writes may keep c for the calls it later gets, as Linux's
// struct file keeps f_cred: ext4 charges a write's blocks to it, so only
// a privileged opener takes the blocks reserved for root. Linux checks the
// writing task's credentials at each write; iovfs's Write carries none,
// so the opener's stand for them, which differs only for a descriptor
// used by a process with other credentials than the one that opened it
// (after setuid, or passed on).
//
// With O_TRUNC on a regular file the VFS calls Setattr with size 0 after
// Open, as Linux's handle_truncate does; Open itself does not truncate.
// Every successful Open is matched by exactly one Release of the handle
// (when it is a Releaser), even if no descriptor was installed. A node
// that is not an Opener opens as itself (its handle is the node): a
// directory lists through its DirReader, and a FIFO, socket or device
// node opens the pipe or the driver registered for its number.
type Opener interface {
	Open(flags int, c Cred) (Handle, error)
}

// A Handle is one open instance of a node, as returned by Opener.Open. It
// implements whichever of Reader, IterReader, Writer, IterWriter, Seeker,
// Releaser, Syncer and Ioctler fit the driver. A handle with neither read
// method gives EINVAL on read, as Linux does for a file without
// .read/.read_iter; the same holds for writes.
//
// All methods of a handle may be called concurrently, from several
// goroutines and through several file descriptors.
type Handle any

// Reader is the scalar read, Linux's .read.
//
// Read reads up to len(p) bytes starting at offset off into p and returns
// the number of bytes read, 0 <= n <= len(p). A short count is not an
// error: it means end of file was reached, or the driver had no more bytes
// ready. At end of file Read returns 0, nil (not io.EOF). Read returns a
// non-nil error only when it transferred nothing; the error is a
// syscall.Errno or wraps one. If a driver breaks this rule, the VFS drops
// the error and keeps the count, because a partial transfer is a success.
//
// off is the file position (read) or the caller's offset (pread). Drivers
// without a position, such as /dev/zero, ignore it. Read must not retain p.
type Reader interface {
	Read(p []byte, off int64) (n int, err error)
}

// IterReader is the vectored read, Linux's .read_iter.
//
// ReadIter fills dst with up to dst.Len() bytes from offset off, in
// segment order, and returns the number of bytes moved. dst is the
// driver's own copy: it may consume it freely. The rules for short counts,
// end of file and errors are those of Reader. ReadIter must not retain
// dst or any of its buffers.
//
// dst is never empty: the VFS answers zero-byte vectored calls itself. A
// vector with one non-empty segment goes to Read when the driver has one.
type IterReader interface {
	ReadIter(dst iov.Iter, off int64) (n int, err error)
}

// Writer is the scalar write, Linux's .write.
//
// Write writes up to len(p) bytes from p at offset off and returns the
// number written, 0 <= n <= len(p). A short count is not an error (a full
// device, a size limit). Write returns a non-nil error only when it wrote
// nothing. Write must not retain p.
type Writer interface {
	Write(p []byte, off int64) (n int, err error)
}

// IterWriter is the vectored write, Linux's .write_iter. It takes bytes
// from src in segment order; otherwise its contract is Writer's.
type IterWriter interface {
	WriteIter(src iov.Iter, off int64) (n int, err error)
}

// Seeker lets a driver decide lseek, Linux's .llseek. Llseek gets the
// current file position as pos and returns the new one, which the VFS
// stores. Without a
// Seeker the VFS applies generic_file_llseek: SEEK_SET, SEEK_CUR, and
// SEEK_END against Stat's Size, with EINVAL for a negative result.
type Seeker interface {
	Llseek(pos, off int64, whence int) (int64, error)
}

// Positionless marks a handle whose reads and writes neither use nor move
// the file position, like /dev/null, /dev/zero and /dev/full in Linux's
// drivers/char/mem.c. The VFS then takes no position lock on read and
// write, and lseek returns 0 unless the handle is also a Seeker. The calls
// at the file position (read, readv, write, writev, and preadv2 and
// pwritev2 with offset -1) pass off = -1, which no call with an explicit
// offset can pass, so a driver that keeps its position itself (an
// imported host file, whose offset is the host's) tells them apart; in
// the compat loop every segment gets -1. Such a driver's Llseek is the
// whole of lseek, and its SEEK_CUR answer is the position that
// copy_file_range and SEEK_CUR locks use.
type Positionless interface {
	Positionless()
}

// Stream marks a handle that cannot seek, like a pipe: pread, pwrite and
// lseek give ESPIPE (Linux FMODE_STREAM).
type Stream interface {
	Stream()
}

// NoWaiter marks a handle whose vectored read and write honour RWF_NOWAIT
// (Linux FMODE_NOWAIT). Without it, preadv2 and pwritev2 with RWF_NOWAIT
// give EOPNOTSUPP, as Linux's kiocb_set_rw_flags does.
type NoWaiter interface {
	NoWait()
}

// Releaser is called once, when the last file descriptor that refers to
// the open file is closed (Linux's .release). Calls that began before the
// close may still be running.
type Releaser interface {
	Release() error
}

// Syncer flushes written data to stable storage (fsync, RWF_SYNC).
type Syncer interface {
	Sync() error
}

// Ioctler handles ioctl(2). p is the calling process, for requests whose
// argument names one of its descriptors (LOOP_CONFIGURE's backing fd). req
// is the Linux request number; arg is the request's argument as a Go value
// (x/sys/unix's own types where they exist: *unix.LoopConfig, *uint64 for
// BLKGETSIZE64, an int for plain integer arguments). Ioctl returns the
// request's non-negative result. Unknown requests give ENOTTY; a known
// request with an argument of the wrong Go type gives EINVAL.
type Ioctler interface {
	Ioctl(p *Proc, req uint, arg any) (int, error)
}

// PathOpener lets an open file without a handle from the node's Opener
// hold the node, as Linux's struct file holds its dentry and so the inode:
// an unlinked node stays allocated (its space, its extended attributes,
// its share of statfs's f_ffree) until the last such file closes too.
// The VFS calls OpenPath once for each O_PATH open, and for each open of
// a directory, FIFO or device node that is not an Opener, and Release on
// the returned value once, after the file's handle is released when its
// last descriptor is closed. It calls nothing else on it.
type PathOpener interface {
	OpenPath() (Releaser, error)
}

// RWFReader is a handle whose vectored read applies preadv2's RWF_*
// flags itself, as a pass-through to a host file does with the host's
// preadv2. For a preadv2 with flags (already checked against those the
// file accepts) the VFS calls ReadIterFlags instead of Read or ReadIter;
// otherwise the contract is IterReader's.
type RWFReader interface {
	ReadIterFlags(dst iov.Iter, off int64, flags int) (n int, err error)
}

// RWFWriter is RWFReader for pwritev2. flags never hold RWF_APPEND or
// RWF_NOAPPEND: the VFS applies those (Appender).
type RWFWriter interface {
	WriteIterFlags(src iov.Iter, off int64, flags int) (n int, err error)
}

// Appender is implemented by handles of files that have an end, such as
// regular files. Append writes the bytes of src at the end of the file,
// atomically with respect to other writes, and returns the offset where
// they landed and the count. The VFS calls it for O_APPEND files and
// RWF_APPEND; without it, those write at the given offset.
type Appender interface {
	Append(src iov.Iter) (off int64, n int, err error)
}

// Directory operations (Linux's inode_operations). A directory node
// implements Lookuper (walk.go) and those of the interfaces below that its
// file system supports; a missing one gives EPERM, as Linux does for a
// file system without the operation, or EROFS on a read-only mount.
//
// What the VFS guarantees when it calls them (the package documentation
// has the whole lock order):
//   - It holds the directory's lock (DirLocker) for the whole call, and
//     for Rename the locks of both directories and the rename seqlock, so
//     no other namespace change of the VFS runs in these directories
//     meanwhile: a driver needs no lock of its own to keep a lookup and
//     the change it decides atomic, and no rename mutex or ancestor check.
//   - It has looked the name up under that lock: Create, Mkdir, Mknod,
//     Symlink and Link are called only for a name that is free, and
//     Unlink, Rmdir and Rename only for one that exists (a file system
//     whose entries change behind the VFS, hostfs over a live host tree,
//     still reports EEXIST and ENOENT from its own state).
//   - It has checked the caller's permission (write and search on the
//     parent, the sticky-directory rule), the mount (EROFS, EXDEV, EBUSY),
//     the names (never "", ".", ".." or containing '/', at most 255
//     bytes), the types rename(2) and unlink(2) require, rename's
//     ancestor rules (EINVAL, ENOTEMPTY), and applied the umask.
//   - c is the caller's credentials: the owner of a new node (its fsuid
//     and fsgid), and whom to charge space to.
//
// The driver answers what depends on its own state: ENOTEMPTY for a
// directory with entries, ENOSPC, EMLINK, and ENOENT for a directory
// removed meanwhile by a path the VFS does not see. Lookups and reads
// (Lookup, Stat, ReadDir) run without the directory's lock, concurrently
// with these calls, so a driver still protects its own data structures.

// Cred is the identity of the process an operation runs for: the owner
// a new file is created with (Uid and Gid are its fsuid and fsgid), and
// what a file system needs to decide what else the caller may do.
type Cred struct {
	Uid, Gid uint32
	// Groups are the supplementary groups, sorted. The slice is shared
	// with the process's credentials: never modify it.
	Groups []uint32
	// Capable reports whether the process has the capabilities Linux
	// checks with capable(), such as CAP_SYS_RESOURCE: in iovfs's model,
	// whether its effective uid is 0.
	Capable bool
	// ACL is set only for a call that creates a node (Create, Mkdir,
	// Mknod, Tmpfile) in a directory with a default ACL: the ACLs the
	// node inherits (posix_acl_create), which an ACLer stores with the
	// node as it makes it, before anything can look it up. The mode the
	// call passes has them applied already, and no umask. nil otherwise.
	ACL *InheritedACL
}

// A DirLocker is a directory that carries the lock the VFS takes for it
// (Linux's i_rwsem, which lives in the inode): a file system embeds a
// DirLock in its directory type and returns its address, the same for
// the life of the directory. The VFS takes it around every change of the
// directory's entries, so changes in different directories run in
// parallel. The driver never takes it itself. A directory that is not a
// DirLocker shares one lock with every other such directory of the
// namespace: correct, but its changes are serialised.
type DirLocker interface {
	DirLock() *DirLock
}

// Creator creates a regular file called name with permission bits mode
// (the umask applied, the set-group-ID bit already dropped where
// inode_init_owner drops it), owned by c's Uid and Gid, or by the
// directory's group where the directory is set-group-ID, as the file
// system decides. It returns the new node.
type Creator interface {
	Create(name string, mode uint32, c Cred) (Node, error)
}

// Mkdirer creates a directory with permission and sticky bits mode (the
// umask applied), owned by c; the set-group-ID bit and group come from a
// set-group-ID parent, as the file system decides.
type Mkdirer interface {
	Mkdir(name string, mode uint32, c Cred) (Node, error)
}

// Symlinker creates a symbolic link called name that points at target,
// owned by c. target is not empty and shorter than PATH_MAX.
type Symlinker interface {
	Symlink(name, target string, c Cred) (Node, error)
}

// Linker makes name another hard link to target, a node of the same file
// system and mount that is not a directory (the VFS checks both, and
// fs.protected_hardlinks). A target whose last link went meanwhile gives
// ENOENT, too many links EMLINK. A new directory block is charged to c.
type Linker interface {
	Link(name string, target Node, c Cred) error
}

// Unlinker removes name, a non-directory (the VFS has checked its type).
// The node lives on while it is open.
type Unlinker interface {
	Unlink(name string, c Cred) error
}

// Rmdirer removes name, a directory (the VFS has checked its type and
// that it is no mount point): ENOTEMPTY if it has entries. The VFS also
// holds the victim's own lock, so no create in it runs meanwhile.
type Rmdirer interface {
	Rmdir(name string, c Cred) error
}

// Renamer moves oldName in this directory to newName in newDir, a
// directory of the same mount, with rename(2)'s rules and renameat2(2)'s
// flags. The VFS holds the rename seqlock and both directories' locks
// (and the lock of a directory being replaced), has looked both names up,
// and has checked: that oldName exists; the flag combinations (EINVAL);
// RENAME_NOREPLACE against an existing newName (EEXIST); RENAME_EXCHANGE
// against a missing one (ENOENT); the types (a directory onto a
// non-directory ENOTDIR, a non-directory onto a directory EISDIR); that
// no directory moves into its own subtree (EINVAL) and no ancestor of
// the source is replaced (ENOTEMPTY); mount points (EBUSY); permissions.
// It does not call Rename when both names are links to one node.
//
// The driver replaces a file, or an empty directory (ENOTEMPTY
// otherwise); with unix.RENAME_EXCHANGE it swaps the two entries whatever
// their types; with unix.RENAME_WHITEOUT it leaves a whiteout (a
// character device 0:0, owned by c) at oldName. A flag it does not
// support gives EINVAL, as Linux answers for a file system without the
// flag.
type Renamer interface {
	Rename(oldName string, newDir Node, newName string, flags uint, c Cred) error
}

// Dirent is one directory entry, as getdents64 reports it.
type Dirent struct {
	Name string
	Ino  uint64
	Type uint8 // unix.DT_REG, DT_DIR, DT_LNK, DT_CHR, DT_BLK...
	// Off is the cookie that resumes the listing after this entry.
	Off int64
}

// DirReader lists a directory (Linux's iterate_shared). ReadDir calls fn
// for the entries after cookie off (an off of 0 starts at the beginning;
// the VFS passes its position less 2, the positions 1 and 2 being its "."
// and ".."), until fn returns false or the entries run out; each entry's
// Off is the cookie to resume after it. Each entry present and not moved
// for the whole listing is reported at least once, even if other entries
// are created, removed or renamed meanwhile (most file systems report it
// exactly once; Linux's tmpfs may report it twice when the entry a listing
// would resume at is renamed). "." and ".." are not reported; the VFS
// adds them. The file system may hold its own locks while it calls fn:
// the VFS's fn never calls back into the file system.
type DirReader interface {
	ReadDir(off int64, fn func(Dirent) bool) error
}

// DirPositioner is a DirReader whose positions work as Linux's tmpfs's
// (simple_offset): a listing that has run out of entries rests at DirEnd,
// as Linux's at DIR_OFFSET_EOD, so that entries made after that are not
// listed until a seek; and an entry that fn refuses is where the listing
// resumes, at the cookie DirAt gives for it (false if it is gone), as
// Linux leaves ctx->pos at an entry that did not fit. The VFS moves its
// position there.
type DirPositioner interface {
	DirEnd() int64
	DirAt(d Dirent) (int64, bool)
}

// DirIterator is a directory handle that lists from positions of its
// own, as a Linux file system's iterate_shared moves ctx->pos: it reports
// "." and ".." itself, and its positions reach getdents64 (d_off) and
// lseek unchanged; the VFS adds no entries and no offset. Iterate lists
// from position pos (the file position): for each entry in order it calls
// ctx.Emit with the position the listing is at as the entry is reported
// (dir_emit's ctx->pos), until Emit returns false (that entry was not
// taken, and the next call at the returned position must report it) or
// the entries run out. It returns the position to resume from. An
// entry's d_off is the position given with the entry after it or, for
// the last one taken, the position returned (filldir64). Entries taken
// before an error are kept. The handle keeps its listing state between
// calls (Linux's file->private_data); the VFS calls it under the file's
// position lock, and ctx is valid only during the call. Such a handle
// usually seeks too (Seeker), as its positions are its own.
type DirIterator interface {
	Iterate(pos int64, ctx *DirContext) (int64, error)
}

// SetAttr says which attributes Setattr changes: the fields whose Set bit
// is in Valid.
type SetAttr struct {
	Valid uint32 // SetMode|SetSize|SetAtime|SetMtime|SetUid|SetGid
	Mode  uint32 // permission bits only
	Size  int64
	Uid   uint32
	Gid   uint32
	Atime time.Time
	Mtime time.Time
}

// SetAttr.Valid bits.
const (
	SetMode = 1 << iota
	SetSize
	SetAtime
	SetMtime
	SetUid
	SetGid
)

// Setattrer changes a node's attributes (chmod, truncate, utimes, chown),
// Linux's .setattr. The VFS has checked the caller's permission for each
// change (setattr_prepare: owner or CAP_FOWNER, CAP_CHOWN, write access
// for a size or for times set to now), the mount (EROFS), and folded in
// the set-ID bits a change drops (should_remove_suid); c is the caller,
// whom a larger size is charged to (ext4's root reserve). It holds no
// lock: the driver serialises changes of one node itself.
//
// Changing the size of a directory gives EISDIR, of another non-regular
// file EINVAL. A size past the file system's limit gives EFBIG or ENOSPC.
// Every change sets ctime; a SetSize alone may leave the times as they
// were where the file system's truncate(2) does (tmpfs: the current size
// of an empty file): ftruncate and O_TRUNC add SetMtime with the current
// time, as Linux adds ATTR_MTIME|ATTR_CTIME.
type Setattrer interface {
	Setattr(a SetAttr, c Cred) error
}

// PermAttrer is a node that reports the attributes permission checks
// need, its mode (type and permission bits, and the Perm* state bits
// below), owner and group, without the cost of a full Stat. The path walk
// of an unprivileged process asks for them on every directory it passes,
// and every write of a regular file for its set-ID and Perm bits; a node
// without PermAttrs is asked for its Stat instead (whose Attributes give
// the immutable and append-only bits, and which counts as PermACL when
// the node is an ACLer). PermAttrs must be safe to call concurrently with
// any other method and must not block.
type PermAttrer interface {
	PermAttrs() (mode, uid, gid uint32)
}

// Bits of PermAttrs' mode above the type and permission bits: the inode
// state that Linux's permission checks read from the inode (i_flags,
// i_acl) without a call into the file system. Stat's Mode never has them.
const (
	// PermImmutable is FS_IMMUTABLE_FL (IS_IMMUTABLE): no write, no
	// attribute or name change, no link, by anyone.
	PermImmutable = 1 << 31
	// PermAppend is FS_APPEND_FL (IS_APPEND): writes only at the end, no
	// truncation, no attribute or name change.
	PermAppend = 1 << 30
	// PermACL says the node has an access ACL, or may have one that is
	// not cached yet (Linux's ACL_NOT_CACHED): a permission check that the
	// ACL could decide asks the node's ACLer. Without it the mode decides,
	// at no cost.
	PermACL = 1 << 29
	// PermKillPriv says the node has a security.capability xattr, or may
	// have one (Linux clears S_NOSEC): a write, truncation, fallocate or
	// chown removes it (file_remove_privs).
	PermKillPriv = 1 << 28
)

// permBits are the Perm* state bits.
const permBits = PermImmutable | PermAppend | PermACL | PermKillPriv

// ACLer is a node of a file system with POSIX ACLs (Linux's IS_POSIXACL,
// get_inode_acl and set_acl). The VFS does everything else: it decodes
// and encodes the system.posix_acl_access and system.posix_acl_default
// xattrs (acl.go), checks them (ACL.Valid), decides who may set them,
// folds an access ACL into the mode (posix_acl_update_mode), makes every
// permission decision with them (acl_permission_check), rewrites the
// access ACL on chmod (posix_acl_chmod) and computes what a new node
// inherits from its directory's default ACL (Cred.ACL). The two names
// never reach an ACLer's Getxattr, Setxattr or Removexattr; its
// Listxattr lists them while the node has them.
//
// GetACL returns the node's ACL of type typ (ACLTypeAccess or
// ACLTypeDefault), nil if it has none, or EOPNOTSUPP if the file system
// has POSIX ACLs turned off (the noacl mount option). Permission checks
// call it for nodes whose PermAttrs carry PermACL, so after the first
// call it must answer from memory, without allocating.
//
// SetACL replaces the ACL of type typ with acl (nil removes it); for an
// access ACL it also sets the permission bits to mode (07777) in the same
// change, so that no reader sees one without the other. It sets ctime.
// The VFS holds the node's directory lock when it is a directory, and no
// lock otherwise; c is the caller, whom space is charged to.
type ACLer interface {
	GetACL(typ int) (*ACL, error)
	SetACL(typ int, acl *ACL, mode uint32, c Cred) error
}

// Xattrer is a node with extended attributes. Names carry their namespace
// prefix as Linux shows them ("user.", "trusted.", "security.",
// "system."). A missing attribute gives ENODATA.
type Xattrer interface {
	Getxattr(name string) ([]byte, error)
	Listxattr() ([]string, error)
}

// ---------------------------------------------------------------------
// Interfaces added for the full system-call surface. Each is optional;
// the VFS answers as Linux does for a file system without the operation
// when a node, handle or file system lacks it.

// DataSyncer is a handle that can flush data without the metadata that is
// not needed to read it back (fdatasync). Without it, Fdatasync calls
// Syncer.Sync; without either, both return 0 for regular files and
// directories, as Linux's noop_fsync, and EINVAL for other files, as
// Linux gives for a character device or pipe without ->fsync.
type DataSyncer interface {
	Datasync() error
}

// Fallocater is a handle that implements fallocate(2). mode is the
// FALLOC_FL_* mask, already checked by the VFS for the combinations Linux
// refuses everywhere (EINVAL, EOPNOTSUPP) and for the access mode (EBADF),
// the mount (EROFS) and the offsets (EINVAL, EFBIG); the driver answers
// what depends on its own state: EOPNOTSUPP for a mode it lacks, ENOSPC,
// ENODEV for a file type it cannot allocate.
//
// c is the calling process's credentials, whom new blocks are charged to.
type Fallocater interface {
	Fallocate(mode uint32, off, length int64, c Cred) error
}

// XattrSetter is a node whose extended attributes can be changed.
// Setxattr honours unix.XATTR_CREATE (EEXIST if present) and
// unix.XATTR_REPLACE (ENODATA if absent); Removexattr gives ENODATA for a
// missing name. The VFS has checked the name's length (ERANGE), the value's
// size (E2BIG), the mount (EROFS) and the caller's permission (xattr.go's
// namespace rules); it holds no lock. c is the caller, whom a new xattr
// block is charged to. The file system applies its own namespace rules
// and limits (EOPNOTSUPP, EPERM, ENOSPC).
type XattrSetter interface {
	Setxattr(name string, data []byte, flags int, c Cred) error
	Removexattr(name string, c Cred) error
}

// Statfser is a FileSystem that reports statfs(2) figures: type magic,
// block size and counts, inode counts, name length. The VFS fills in
// f_flags from the mount (ST_RDONLY...) and f_fsid when they are zero.
type Statfser interface {
	Statfs() (unix.Statfs_t, error)
}

// FlagSetter is a handle that must see its file-status flags: the VFS
// calls SetFlags after Open with the open flags, and on every
// fcntl(F_SETFL) with the new flags (O_APPEND, O_NONBLOCK, O_NOATIME,
// O_DIRECT, O_ASYNC as Linux lets them change) before it stores them. An
// error, such as EINVAL for O_DIRECT on a driver that cannot do it, leaves
// the flags unchanged and is returned to the caller.
type FlagSetter interface {
	SetFlags(flags int) error
}

// Fcntler is a handle with fcntl(2) commands of its own, such as
// F_GETPIPE_SZ and F_SETPIPE_SZ for pipes. The VFS handles the generic
// commands itself and passes the others here; an unknown command gives
// EINVAL.
type Fcntler interface {
	Fcntl(p *Proc, cmd, arg int) (int, error)
}

// Mknoder is a directory that can make special files (mknod(2)): FIFOs,
// sockets, character and block devices, and regular files. mode holds the
// file type and the masked permission bits; rdev is the device number
// for S_IFCHR and S_IFBLK.
type Mknoder interface {
	Mknod(name string, mode uint32, rdev uint64, c Cred) (Node, error)
}

// Poller is a handle whose readiness changes over time, such as a pipe
// end, and whose reads and writes may therefore block (poll(2), Linux's
// .poll). Handles without it are always ready: poll reports POLLIN,
// POLLOUT, POLLRDNORM and POLLWRNORM for them, as Linux's DEFAULT_POLLMASK.
//
// Poll returns the events that are ready now, as a mask of unix.POLLIN,
// POLLOUT, POLLERR, POLLHUP and unix.EPOLLRDNORM, EPOLLWRNORM (the same
// bits as poll's POLLRDNORM and POLLWRNORM), whatever events asks for:
// events is a hint of what the caller wants (Linux's poll_table key), and
// the VFS masks the result with events|POLLERR|POLLHUP itself.
//
// If w is not nil the caller will sleep if nothing is ready, and Poll must
// register w, by calling w.Watch(q), on every WaitQueue q whose wake-up
// could change the result, before it computes the mask, so that a change
// between the computation and the sleep is not lost. The driver calls
// q.Wake after every change that can make an event ready (bytes arrive,
// room appears, an end closes); Wake wakes every registered poller. The
// VFS removes w from the queues when the poll call ends; the driver never
// does, and never keeps w. Poll is called again, with w nil, after each
// wake-up.
//
// Poll must not block, and should not allocate: Watch and Wake do not
// once a queue has held as many waiters before.
//
// Because a Poller's calls may block, the VFS holds a reference to the
// open file for the duration of each read and write at the file position
// (read, readv, write, writev, preadv2 and pwritev2 at offset -1), as
// Linux's fdget does for a shared table: a Release that a concurrent close
// triggers runs after those calls return, not under them. (Positioned
// calls do not hold one yet; pipes, the only Pollers so far, refuse them
// with ESPIPE.)
type Poller interface {
	Poll(events uint32, w *PollWaiter) uint32
}

// Revalidator is a directory whose entries can change without the VFS
// seeing it, such as a pass-through to a live host tree (hostfs). The
// dentry cache (dcache.go) remembers what Lookup answered for a name;
// before it uses that answer again it calls Revalidate with the name and
// the node it remembers (nil for a remembered ENOENT). Revalidate reports
// whether the answer still holds; false drops it and the VFS calls Lookup
// again, as Linux's d_revalidate. A directory whose entries must never be
// cached returns false always. Revalidate may be called concurrently and
// must not call back into the VFS.
type Revalidator interface {
	Revalidate(name string, child Node) bool
}

// FileTyper is a Node that reports its file type, the S_IFMT bits of
// Stat's Mode, without building a Stat. A node's type never changes. The
// path walk asks it of every directory it passes through, so a file
// system whose Stat takes a lock or does I/O should implement it.
type FileTyper interface {
	FileType() uint32
}

// DirectReader is a handle whose file data lives in memory the process
// can address: a regular file on a file system mounted with dax over a
// device with direct access (block.DirectAccessor). It lets a caller that
// only passes the bytes on (the FUSE export's READ) hand them over
// without copying them first.
//
// ReadDirect(off, n) returns a view b of the file's bytes [off,
// off+len(b)), the device's own memory, not a copy: 0 <= len(b) <= n,
// len(b) == cap(b). It applies pread's end-of-file rule, so len(b) is 0
// at or past the end of the file; otherwise len(b) is short of the bytes
// pread would return only where the data stops being contiguous in the
// device (an extent ends), and the caller reads on from off+len(b). A
// negative off gives EINVAL. Where the data at off is not in device
// memory at all (a hole or unwritten extent, which read as zeros, inline
// data, a mount without dax) it returns EOPNOTSUPP, and the caller uses
// Read. The caller must not write into b. b stays valid while the file
// system holds its device, that is at least while the handle is open;
// its bytes are the file's current ones, so a concurrent write may show
// through, as it may in a read. Reading b may fault if the memory is a
// host file that another process truncates: pass it to the kernel (a
// write(2) from it fails with EFAULT) or copy it with block.Copy.
type DirectReader interface {
	ReadDirect(off int64, n int) ([]byte, error)
}

// HostFiler is a handle that is an open file of the host kernel (a
// hostfs regular file). HostFile calls fn with the host descriptor and
// returns what fn returns; the descriptor stays open for the call, and
// only for it, and after Release HostFile returns EBADF without calling
// fn. fn must not close the descriptor or change its file status flags
// or offset; it may pass it to the kernel to take its own reference (the
// FUSE export registers it as a passthrough backing file).
type HostFiler interface {
	HostFile(fn func(fd int) error) error
}

// FileAttrer is a node with inode flags, the attributes chattr(1) sets
// (Linux's fileattr_get and fileattr_set). The VFS answers
// FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IOC_FSGETXATTR and
// FS_IOC_FSSETXATTR for it (fileattr.go), decides who may change what
// (the owner or CAP_FOWNER; CAP_LINUX_IMMUTABLE for the immutable and
// append-only flags) and enforces those two flags, which the node also
// reports in PermAttrs (PermImmutable, PermAppend) and in Stat's
// Attributes.
//
// GetFileAttr returns the node's flags, both families filled in
// (FileAttr.FillFlags). SetFileAttr stores a's flags, or refuses with
// EOPNOTSUPP flags or fsx fields the file system does not have (as each
// Linux file system's fileattr_set does); it sets ctime. The VFS holds
// the node's directory lock when it is a directory.
type FileAttrer interface {
	GetFileAttr() (FileAttr, error)
	SetFileAttr(a FileAttr, c Cred) error
}

// Exporter is a FileSystem whose files can be named by handles that
// outlive their names (Linux's export_operations): name_to_handle_at and
// open_by_handle_at (fhandle.go), and the FUSE export's node ids.
//
// EncodeFH returns n's FileID: its inode number and generation, which
// together name n for as long as n exists. NodeByIno returns the node
// numbered ino, the same Node value the file system hands out otherwise,
// while that node exists (linked, or unlinked but still open) and, on a
// file system that tracks them as Linux's tmpfs does, a handle of it was
// made (EncodeFH); one that keeps its inodes on a disk finds any live
// inode, as ext4_iget does. The caller compares the generation.
// It gives ESTALE when there is none. The node is held, as an O_PATH open
// holds it, until the caller releases the Releaser (then the node may go,
// if it has no links nor opens). Both may be called concurrently with
// anything and take only the file system's own locks.
type Exporter interface {
	EncodeFH(n Node) (FileID, error)
	NodeByIno(ino uint64) (Node, Releaser, error)
}

// HandleCoder is an Exporter whose handles are not laid out as Linux's
// tmpfs lays them out (FileID.Handle, which the VFS uses otherwise): its
// own encode_fh and fh_to_dentry. EncodeHandle returns id's handle.
// DecodeHandle returns the FileID h names (its type's FILEID_IS_* flags
// aside), anyGen when it matches the file of that number whatever its
// generation (ext4 takes a generation of 0 so), and false when it names
// nothing on this file system (ESTALE: too short, a type it does not
// make).
type HandleCoder interface {
	EncodeHandle(id FileID) unix.FileHandle
	DecodeHandle(h unix.FileHandle) (id FileID, anyGen, ok bool)
}

// ParentEncoder is an Exporter whose handles can also name the directory
// that holds a file (Linux's encode_fh with a parent, for a file system
// with fh_to_parent), as name_to_handle_at's AT_HANDLE_CONNECTABLE asks:
// EncodeHandleParent returns the handle of id with parent's; the VFS adds
// the FILEID_IS_CONNECTABLE flag to its type. Its DecodeHandle decodes the
// file from such a handle.
type ParentEncoder interface {
	EncodeHandleParent(id, parent FileID) unix.FileHandle
}
