package tmpfs

// PermAttrs implements vfs.PermAttrer: four atomic loads, no lock, so an
// unprivileged path walk pays almost nothing for its search checks.
func (n *inode) PermAttrs() (mode, uid, gid uint32) {
	return n.mode.Load() | n.perm.Load(), n.uid.Load(), n.gid.Load()
}
