package disk

// POSIX ACLs on the Writer, as Linux's fs/ext4/acl.c stores them: the
// system.posix_acl_access and system.posix_acl_default values, taken and
// given in the kernel's xattr format (version 2, 8-byte entries), are
// kept under name indexes 2 and 3 with an empty name in ext4's compact
// format (ext4_acl_to_disk: a version 1 header, 4-byte ext4_acl_entry_short
// for the entries without an id, 8-byte ext4_acl_entry for named users
// and groups). Who may set what, and the ACL's effect on the mode, are
// the VFS's; the Writer stores the result in one change.

import (
	"encoding/binary"
	"syscall"
)

// ACL tags (ACL_USER_OBJ...).
const (
	aclUserObj  = 0x01
	aclUser     = 0x02
	aclGroupObj = 0x04
	aclGroup    = 0x08
	aclMask     = 0x10
	aclOther    = 0x20
)

// aclFromXattr converts an ACL in the kernel's xattr format into ext4's
// on-disk format (ext4_acl_to_disk after posix_acl_from_xattr): EINVAL
// for a value that is not a version 2 header and whole entries of known
// tags.
func aclFromXattr(b []byte) ([]byte, error) {
	if len(b) < 4 || le32(b, 0) != 2 || (len(b)-4)%8 != 0 {
		return nil, syscall.EINVAL
	}
	out := binary.LittleEndian.AppendUint32(make([]byte, 0, len(b)), 1)
	for p := 4; p < len(b); p += 8 {
		tag, perm := le16(b, p), le16(b, p+2)
		out = binary.LittleEndian.AppendUint16(out, tag)
		out = binary.LittleEndian.AppendUint16(out, perm)
		switch tag {
		case aclUserObj, aclGroupObj, aclMask, aclOther:
		case aclUser, aclGroup:
			out = binary.LittleEndian.AppendUint32(out, le32(b, p+4))
		default:
			return nil, syscall.EINVAL
		}
	}
	return out, nil
}

// aclIndex is the name index of an access (false) or default (true) ACL.
func aclIndex(dflt bool) uint8 {
	if dflt {
		return xACLDefault
	}
	return xACLAccess
}

// SetACLAs replaces ino's access ACL (dflt false) or default ACL (dflt
// true) with acl, in the kernel's xattr format (nil removes it), acting
// for c (see lockAs); for an access ACL with setMode, the permission bits
// become mode (07777) in the same change, as ext4_set_acl updates i_mode
// in the ACL's journal handle. ctime moves when the ACL or the mode
// changes. EINVAL for a malformed value, ENOSPC when it fits neither in
// the inode nor in its xattr block.
func (w *Writer) SetACLAs(c *Caller, ino uint32, dflt bool, acl []byte, mode uint32, setMode bool) error {
	var val []byte
	if acl != nil {
		var err error
		if val, err = aclFromXattr(acl); err != nil {
			return err
		}
	}
	if err := w.lockAs(c); err != nil {
		return err
	}
	defer w.unlock()
	defer w.writeSuper()
	raw, err := w.getInode(ino)
	if err != nil {
		return err
	}
	changed, err := w.setXattrRaw(ino, raw, aclIndex(dflt), "", val, 0)
	if err != nil {
		return err
	}
	if old := uint32(le16(raw, 0)); setMode && old&07777 != mode&07777 {
		binary.LittleEndian.PutUint16(raw, uint16(old&S_IFMT|mode&07777))
		changed = true
	}
	if !changed {
		return nil
	}
	touch(raw, w.Now(), tCtime)
	return w.putInode(ino, raw)
}

// initACL stores in raw, the new inode ino not yet written, the ACLs
// that the Caller the Writer acts for says it inherits (ext4_init_acl,
// run in __ext4_new_inode's handle): the access ACL, and the default ACL
// of a directory. Called with mu held.
func (w *Writer) initACL(ino uint32, raw []byte) error {
	c := w.cur
	if c == nil {
		return nil
	}
	for _, a := range [...]struct {
		val  []byte
		dflt bool
	}{{c.ACLDefault, true}, {c.ACLAccess, false}} {
		if a.val == nil || a.dflt && le16(raw, 0)&S_IFMT != S_IFDIR {
			continue
		}
		v, err := aclFromXattr(a.val)
		if err != nil {
			return err
		}
		if _, err := w.setXattrRaw(ino, raw, aclIndex(a.dflt), "", v, 0); err != nil {
			return err
		}
	}
	return nil
}
