package vfs

// Clearing set-ID bits and file capabilities on write (Linux
// file_remove_privs): a write of at least one byte to a regular file, a
// fallocate, a truncation or a chown by a process without CAP_FSETID
// drops the file's set-user-ID bit, and its set-group-ID bit if the file
// is group-executable or the writer is not in its group; whoever the
// caller is, a security.capability xattr goes too (security_inode_killpriv).

import "golang.org/x/sys/unix"

// fmKillPriv marks a regular file open for writing: its writes check the
// set-ID bits. It lies outside the fm* bits of file.go.
const fmKillPriv = 1 << 16

// xattrCaps is XATTR_NAME_CAPS, the file capabilities.
const xattrCaps = "security.capability"

// removePrivs is file_remove_privs for a write by p to f. It costs an
// interface call and a test on tmpfs when there is nothing to remove
// (Linux's IS_NOSEC). A file system reports a capability xattr only
// through PermAttrs (PermKillPriv).
func (p *Proc) removePrivs(f *file) {
	c := p.cred.Load()
	if c.capable() {
		// Only the capability xattr goes, which only a PermAttrer
		// reports: root's writes elsewhere cost a compare.
		if pa, ok := f.node.(PermAttrer); ok {
			if m, _, _ := pa.PermAttrs(); m&PermKillPriv != 0 {
				killCaps(f.node, c)
			}
		}
		return
	}
	mode, _, gid, err := nodeAttrs(f.node)
	if err != nil || mode&(unix.S_ISUID|unix.S_ISGID|PermKillPriv) == 0 {
		return
	}
	if mode&PermKillPriv != 0 {
		killCaps(f.node, c)
	}
	if mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	m := mode &^ unix.S_ISUID
	if m&unix.S_ISGID != 0 && (m&unix.S_IXGRP != 0 || !c.inGroup(gid)) {
		m &^= unix.S_ISGID
	}
	if m != mode {
		setattr(f.node, SetAttr{Valid: SetMode, Mode: m & 0o7777}, c)
	}
}

// killCaps is cap_inode_killpriv: n's security.capability xattr is
// removed, without a permission check (the change that removes it was
// allowed). A file without one is left alone.
func killCaps(n Node, c *creds) {
	if x, ok := n.(XattrSetter); ok {
		x.Removexattr(xattrCaps, c.fsCred())
	}
}

// anyBytes reports whether iovs holds at least one byte.
func anyBytes(iovs [][]byte) bool {
	for _, b := range iovs {
		if len(b) != 0 {
			return true
		}
	}
	return false
}
