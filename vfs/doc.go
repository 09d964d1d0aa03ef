// Package vfs is the process-facing API of iovfs: the file descriptor
// table, open-file objects, mounts, the path walk, credentials and
// permission checks, the namespace's locks and caches, and the dispatch of
// calls to drivers. Its calls follow Linux's system calls: flags and errno
// values are golang.org/x/sys/unix's, errors from descriptor calls are
// bare syscall.Errno values, and errors from path calls are *fs.PathError
// values wrapping one. Each system call family has its own file: read.go,
// write.go, seek.go, open.go, openat2.go, dup.go, stat.go, mkdir.go,
// unlink.go, rename.go, link.go, attr.go, xattr.go, getdents.go, chdir.go,
// mount.go, lock.go, pipe.go and so on.
//
// # Layers
//
// A Proc (proc.go) is a process: a descriptor table, a current directory,
// a umask and credentials, in a Namespace of mounts. Its methods are the
// system calls. Below it, the drivers: file systems (a FileSystem whose
// Root is a Node), device drivers (an Opener registered for a device
// number, device.go) and block devices. The whole contract between the VFS
// and a driver is in ops.go: small optional interfaces, found by type
// assertion, each saying what the VFS has checked and holds when it calls
// it, what the driver answers, and what happens when it is missing. A
// driver asserts each interface it implements at compile time
// (var _ vfs.X = (*T)(nil)), and vfs/vfstest is the conformance suite a
// driver runs.
//
// The data path is chosen once, at open (file.go): a read or write tests
// at most whether an interface field is nil, and a single-buffer call
// never pays for vectors. The namespace path is the walk (walk.go) over
// the dentry cache (dcache.go, walkcached.go).
//
// # Credentials
//
// A Proc's credentials are one immutable value replaced whole by the
// set*id calls (cred.go); a call loads them once. The VFS makes every
// permission decision itself, Linux's generic_permission, may_create,
// may_delete, the sticky rule, setattr_prepare and the xattr namespace
// rules (permission.go), so a driver never checks modes. Every driver call
// that creates, removes or renames a name, changes attributes or xattrs,
// opens, or may allocate space receives the caller's credentials as one
// Cred argument: the owner of a new node, and whom space is charged to (a
// file system with a root reserve charges only a capable caller for it).
// A handle may keep its opener's Cred for its later writes (Linux's
// f_cred).
//
// # Lock order
//
// Outermost first. A lock is never taken while one below it is held.
//
//  1. Namespace.renameMu: renames between two directories (Linux's
//     s_vfs_rename_mutex), so no directory moves while a rename decides
//     which of its parents is the other's ancestor.
//  2. Directory locks (DirLock, Linux's i_rwsem; dirlock.go): the parent
//     of every create, mkdir, mknod, symlink, link, unlink, rmdir and
//     open with O_CREAT, from the final lookup of the name to the end of
//     the change; both parents of a rename (an ancestor before its
//     descendant, else by the lock's address); then a child: the victim
//     of an rmdir or of a rename over a directory, or a directory a
//     mount covers (lock_mount). Lookups, reads and listings take none.
//  3. Namespace.mu: the mount table's writers (mount, unmount).
//  4. The rename seqlock's writer side (Namespace.rename,
//     renamelock.go, Linux's rename_lock): every rename and every change
//     of the mount table holds it, so its count is odd for the whole
//     change. A walk under RESOLVE_BENEATH or RESOLVE_IN_ROOT samples the
//     count when it starts (waiting while it is odd) and gives EAGAIN at
//     a ".." after it moved: the directory it stood in may have been
//     moved out of its root.
//  5. File and handle locks: fdTable.mu, then file.posMu (the file
//     position, getdents' cursor), then a handle's own locks.
//  6. Leaf locks, taken with nothing of the VFS's held after them: the
//     record-lock table (lock.go), the FIFO table (fifo.go), the device
//     table (device.go), a dentry-cache shard (dcache.go).
//
// Drivers take their own locks inside their methods, after all of the
// VFS's (a driver never calls back into the VFS with one held). What a
// driver may leave to the VFS: the atomicity of a namespace change (the
// lookup and the change run under the directory locks), the
// serialisation of renames, the ancestor checks. What it keeps: the locks
// that protect its own data against the readers that take no VFS lock,
// such as a tmpfs directory's map against Lookup and ReadDir, and a
// file's pages against concurrent reads and writes (tmpfs reads pages
// under a sequence count, without a lock).
//
// # Caches
//
// The dentry cache (dcache.go) remembers what a directory's Lookup
// answered for a name, positive or negative, so a cached walk calls no
// driver code; its lookups are lock-free. The VFS invalidates it, once,
// under the directory locks, around every change of a name it makes
// (dcache.invalidate and done); a driver whose directories change behind
// the VFS (hostfs over a live host tree) implements Revalidator, and
// Unmount drops a file system's dentries. Drivers keep their own caches
// (ext4's buffer and extent caches, its directory listings) and
// invalidate them on their own changes.
//
// # Errors
//
// The VFS decides every errno it can from its own state, in Linux's order
// of checks (each call's comment names the kernel function it follows):
// EBADF, EINVAL, ENOENT, ENOTDIR, EISDIR, ENAMETOOLONG, ELOOP, EXDEV,
// EBUSY, EROFS, EACCES, EPERM. A driver answers the rest, from its own
// state (ENOTEMPTY, ENOSPC, EFBIG, EIO, EUCLEAN), as syscall.Errno values
// or errors that wrap one. A missing driver interface gives what Linux
// gives for a file system without the operation: EPERM for a namespace
// change, EINVAL for a rename flag or a read or write method,
// EOPNOTSUPP for xattrs and fallocate.
//
// # Nodes: identity and lifetime
//
// A Node is an inode. The VFS compares nodes with ==, keys its caches,
// locks and mount points by them, and expects a file system to hand out
// the same Node value for the same object while the VFS holds it (a
// pointer type does this naturally, with a table of live nodes where the
// objects come from disk). A directory's DirLock lives in its node, so a
// second node for the same directory would have a second lock. A node
// stays valid while anything holds it: a dentry, an open file, a mount,
// the current directory of a Proc. Unlinking a node's last name does not
// end it: an open file, an O_PATH descriptor or a directory handle keeps
// it (PathOpener, Releaser), and the file system frees it at the last
// Release, as Linux frees an orphan at its last iput. A directory removed
// while open is dead (DirLock): nothing can be created in it, and it
// lists nothing (ENOENT).
package vfs
