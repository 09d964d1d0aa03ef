package vfs

// Clearing set-ID bits on write (Linux file_remove_privs): a write of at
// least one byte to a regular file by a process without CAP_FSETID drops
// the file's set-user-ID bit, and its set-group-ID bit if the file is
// group-executable or the writer is not in its group.

import "golang.org/x/sys/unix"

// fmKillPriv marks a regular file open for writing: its writes check the
// set-ID bits. It lies outside the fm* bits of file.go.
const fmKillPriv = 1 << 16

// removePrivs is file_remove_privs for a write by p to f. It costs a
// compare for root, and three atomic loads for others on tmpfs.
func (p *Proc) removePrivs(f *file) {
	c := p.cred.Load()
	if c.capable() {
		return
	}
	mode, _, gid, err := nodeAttrs(f.node)
	if err != nil || mode&(unix.S_ISUID|unix.S_ISGID) == 0 {
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

// anyBytes reports whether iovs holds at least one byte.
func anyBytes(iovs [][]byte) bool {
	for _, b := range iovs {
		if len(b) != 0 {
			return true
		}
	}
	return false
}
