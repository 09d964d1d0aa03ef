package disk

// sIsgid is the set-group-ID bit of a mode.
const sIsgid = 0o2000

// inheritGroup is Linux's inode_init_owner for a new inode of mode made by
// a caller of group gid in the directory whose raw inode is draw: a
// set-group-ID directory gives the new inode its own group, and a new
// directory its set-group-ID bit too.
func inheritGroup(draw []byte, mode, gid uint32) (uint32, uint32) {
	if iMode(draw)&sIsgid == 0 {
		return mode, gid
	}
	gid = uint32(le16(draw, 0x18)) | uint32(le16(draw, 0x7A))<<16
	if mode&S_IFMT == S_IFDIR {
		mode |= sIsgid
	}
	return mode, gid
}
