// Package overlay is Linux's overlayfs on iovfs: a copy-on-write union of
// one or more read-only lower directories and an optional upper directory
// with its work directory, on any iovfs file systems, in the kernel's
// on-disk format (Documentation/filesystems/overlayfs.rst), so that an
// upper directory written here mounts in the kernel with the same tree,
// and the other way round.
//
// # Semantics
//
// A name is looked up in the upper directory, then in each lower one in
// order, as ovl_lookup does without redirect_dir, index or metacopy: a
// non-directory in the topmost layer that has the name hides what is
// below it; directories of the same name merge, down to the first opaque
// one (trusted.overlay.opaque="y", or user.overlay.opaque under the
// userxattr option); a whiteout (a character device 0:0) hides the name
// below it. Listings merge the layers' entries, each name once, without
// whiteouts.
//
// The first change of a lower object copies it up: a write open,
// truncate, chmod, chown, utimes, an xattr change, a link, or a rename.
// The copy is made in the work directory (workdir/work) under a temporary
// name, with its data, extended attributes, owner, mode and times, and
// renamed into the upper directory only when complete, so that a crash
// leaves either the lower object or the whole copy visible; the work
// directory is emptied at every mount. Its ancestors are copied up first.
// Removing a name that a lower layer has leaves a whiteout, a hard link
// to one whiteout the mount keeps in the work directory, as Linux 6's
// ovl_whiteout does; a directory made over a whiteout is made opaque in
// the work directory and exchanged with it. Renaming a lower or merged
// directory gives EXDEV, as Linux without redirect_dir; a pure upper
// directory moves, made opaque when its new parent is merged.
//
// st_dev and st_ino are the kernel's with xino=off: when every layer is
// on one file system, every object reports the overlay's st_dev and the
// inode number of the layer that holds it, or of the lower object it was
// copied up from in this mount when that was a directory or had one link
// (Linux keeps that across mounts through the origin file handle, which
// is not written here); otherwise directories report the overlay's
// st_dev and an inode number of the mount's, and other objects their
// layer's st_dev and st_ino. A merged directory has one link. Hard links
// of a lower file are separate files once one is copied up, as Linux
// without index.
//
// # Layers and credentials
//
// The overlay reaches its layers through the VFS, as Linux's reaches them
// through private clones of their mounts: each layer is a
// vfs.Proc.PrivateMount of the directory named at mount time, with the
// mounter's credentials, and every object the overlay uses is an O_PATH
// descriptor of that process. The layers' own locks, permission checks
// and caches apply to everything the overlay does to them, with the
// mounter's credentials (Linux's ovl_override_creds); the caller's are
// checked by the VFS against the overlay's own nodes, and give a new
// object its owner. The overlay keeps its layers' original mounts busy
// while it is mounted.
//
// # Locks
//
// Outermost first: the VFS's locks on the overlay's directories (held
// around every namespace call), a node's copy-up mutex (cu, taken for a
// node before its parent's), a directory's mutex (mu: its children and
// its namespace changes, against lookups that take no VFS lock), then the
// locks of the private namespaces inside each call on a layer. None of
// the overlay's locks is ever taken with a layer's lock held: a layer
// never calls into the overlay.
package overlay
