package vfs

// POSIX access control lists (Linux fs/posix_acl.c): the kernel's xattr
// format of system.posix_acl_access and system.posix_acl_default, the
// validity rules, the permission algorithm, and the rules that tie an ACL
// to the mode (posix_acl_update_mode, posix_acl_chmod, posix_acl_create).
// The VFS applies them once for every file system; a file system only
// stores ACLs (ACLer).

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// ACL entry tags (Linux's ACL_USER_OBJ...), as in the xattr format.
const (
	ACLUserObj  = 0x01
	ACLUser     = 0x02
	ACLGroupObj = 0x04
	ACLGroup    = 0x08
	ACLMask     = 0x10
	ACLOther    = 0x20
)

// ACL types: which of a node's two ACLs (Linux's ACL_TYPE_ACCESS and
// ACL_TYPE_DEFAULT).
const (
	ACLTypeAccess  = 0x8000
	ACLTypeDefault = 0x4000
)

// ACL xattr names.
const (
	XattrACLAccess  = "system.posix_acl_access"
	XattrACLDefault = "system.posix_acl_default"
)

// aclUndefinedID is ACL_UNDEFINED_ID, the id of entries that name no one.
const aclUndefinedID = 0xffffffff

// aclXattrVersion is POSIX_ACL_XATTR_VERSION.
const aclXattrVersion = 2

// ACLEntry is one entry: a tag, rwx permission bits (4, 2, 1) and, for
// ACLUser and ACLGroup entries, the uid or gid named.
type ACLEntry struct {
	Tag  uint16
	Perm uint16
	ID   uint32
}

// ACL is a POSIX ACL, its entries in the order Linux keeps them (user
// owner, named users, group owner, named groups, mask, other). An ACL is
// never changed once a node holds it: a change makes a new one.
type ACL struct {
	Entries []ACLEntry
}

// ParseACLXattr decodes an ACL in the kernel's xattr format, as Linux's
// posix_acl_from_xattr: a 4-byte version 2 header, then 8-byte entries
// (tag, perm, id; little-endian). An empty value is no ACL (nil). A
// value shorter than the header or not a whole number of entries, an
// unknown tag, or a named entry with id -1 gives EINVAL; another version
// EOPNOTSUPP. The entries are not checked against each other: Valid does.
func ParseACLXattr(b []byte) (*ACL, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) < 4 {
		return nil, errEINVAL
	}
	if binary.LittleEndian.Uint32(b) != aclXattrVersion {
		return nil, errEOPNOTSUP
	}
	b = b[4:]
	if len(b)%8 != 0 {
		return nil, errEINVAL
	}
	if len(b) == 0 {
		return nil, nil
	}
	a := &ACL{Entries: make([]ACLEntry, len(b)/8)}
	for i := range a.Entries {
		e := &a.Entries[i]
		e.Tag = binary.LittleEndian.Uint16(b[8*i:])
		e.Perm = binary.LittleEndian.Uint16(b[8*i+2:])
		switch e.Tag {
		case ACLUserObj, ACLGroupObj, ACLMask, ACLOther:
			e.ID = aclUndefinedID
		case ACLUser, ACLGroup:
			e.ID = binary.LittleEndian.Uint32(b[8*i+4:])
			if e.ID == aclUndefinedID {
				return nil, errEINVAL
			}
		default:
			return nil, errEINVAL
		}
	}
	return a, nil
}

// Xattr encodes a in the kernel's xattr format (posix_acl_to_xattr):
// entries without an id carry ACL_UNDEFINED_ID.
func (a *ACL) Xattr() []byte {
	b := make([]byte, 4+8*len(a.Entries))
	binary.LittleEndian.PutUint32(b, aclXattrVersion)
	for i, e := range a.Entries {
		o := 4 + 8*i
		binary.LittleEndian.PutUint16(b[o:], e.Tag)
		binary.LittleEndian.PutUint16(b[o+2:], e.Perm)
		id := uint32(aclUndefinedID)
		if e.Tag == ACLUser || e.Tag == ACLGroup {
			id = e.ID
		}
		binary.LittleEndian.PutUint32(b[o+4:], id)
	}
	return b
}

// Valid reports whether a is a well-formed ACL, as Linux's
// posix_acl_valid: permissions within rwx, the entries in their order
// (one user owner, named users, one group owner, named groups, a mask,
// one other), and a mask when there is a named entry; EINVAL otherwise.
func (a *ACL) Valid() error {
	const (
		stUser = iota
		stNamedUser
		stGroup
		stOther
		stDone
	)
	state, needsMask := stUser, false
	for _, e := range a.Entries {
		if e.Perm&^7 != 0 {
			return errEINVAL
		}
		switch e.Tag {
		case ACLUserObj:
			if state != stUser {
				return errEINVAL
			}
			state = stNamedUser
		case ACLUser:
			if state != stNamedUser {
				return errEINVAL
			}
			needsMask = true
		case ACLGroupObj:
			if state != stNamedUser {
				return errEINVAL
			}
			state = stGroup
		case ACLGroup:
			if state != stGroup {
				return errEINVAL
			}
			needsMask = true
		case ACLMask:
			if state != stGroup {
				return errEINVAL
			}
			state = stOther
		case ACLOther:
			if state != stOther && !(state == stGroup && !needsMask) {
				return errEINVAL
			}
			state = stDone
		default:
			return errEINVAL
		}
	}
	if state != stDone {
		return errEINVAL
	}
	return nil
}

// clone returns a copy of a that can be changed.
func (a *ACL) clone() *ACL {
	return &ACL{Entries: append([]ACLEntry(nil), a.Entries...)}
}

// equivMode is posix_acl_equiv_mode: the permission bits a stands for
// (the user owner's, the mask's or else the group owner's, and other's)
// in mode, and whether a says more than they do (named entries or a
// mask): equiv is false then.
func (a *ACL) equivMode(mode uint32) (uint32, bool) {
	var m uint32
	equiv := true
	for _, e := range a.Entries {
		p := uint32(e.Perm) & 7
		switch e.Tag {
		case ACLUserObj:
			m |= p << 6
		case ACLGroupObj:
			m |= p << 3
		case ACLOther:
			m |= p
		case ACLMask:
			m = m&^0o070 | p<<3
			equiv = false
		case ACLUser, ACLGroup:
			equiv = false
		}
	}
	return mode&^0o777 | m, equiv
}

// chmod is __posix_acl_chmod: a copy of a whose user owner, mask (or
// group owner, without a mask) and other entries take mode's bits.
func (a *ACL) chmod(mode uint32) *ACL {
	n := a.clone()
	group, mask := -1, -1
	for i := range n.Entries {
		e := &n.Entries[i]
		switch e.Tag {
		case ACLUserObj:
			e.Perm = uint16(mode>>6) & 7
		case ACLGroupObj:
			group = i
		case ACLMask:
			mask = i
		case ACLOther:
			e.Perm = uint16(mode) & 7
		}
	}
	if mask < 0 {
		mask = group
	}
	if mask >= 0 {
		n.Entries[mask].Perm = uint16(mode>>3) & 7
	}
	return n
}

// createMasq is posix_acl_create_masq: the access ACL a new node gets
// from its directory's default ACL dflt and the mode it is created with,
// and the mode that results. The ACL is nil when the mode says all it
// does.
func (dflt *ACL) createMasq(mode uint32) (*ACL, uint32) {
	a := dflt.clone()
	m := mode
	group, mask := -1, -1
	equiv := true
	for i := range a.Entries {
		e := &a.Entries[i]
		switch e.Tag {
		case ACLUserObj:
			e.Perm &= uint16(m>>6) | ^uint16(7)
			m &= uint32(e.Perm)<<6 | ^uint32(0o700)
		case ACLUser, ACLGroup:
			equiv = false
		case ACLGroupObj:
			group = i
		case ACLOther:
			e.Perm &= uint16(m) | ^uint16(7)
			m &= uint32(e.Perm) | ^uint32(0o007)
		case ACLMask:
			mask = i
			equiv = false
		}
	}
	if mask < 0 {
		mask = group
	}
	if mask >= 0 {
		e := &a.Entries[mask]
		e.Perm &= uint16(m>>3) | ^uint16(7)
		m &= uint32(e.Perm)<<3 | ^uint32(0o070)
	}
	mode = mode&^0o777 | m&0o777
	if equiv {
		return nil, mode
	}
	return a, mode
}

// aclResult is what an ACL says of a request: granted, denied, or (no
// ACL) that the mode decides.
type aclResult int

const (
	aclNone aclResult = iota
	aclGranted
	aclDenied
)

// permission is posix_acl_permission for c, not the owner of a file owned
// by uid and gid (acl_permission_check has decided for the owner): the
// first named user entry for fsuid, else the group entries (owning group
// and named groups) of the caller's groups that grant all of want, each
// limited by the mask, else other if no group entry matched.
func (a *ACL) permission(c *creds, gid uint32, want int) aclResult {
	want &= MayRead | MayWrite | MayExec
	w := uint16(want)
	found := false
	for i, e := range a.Entries {
		switch e.Tag {
		case ACLUser:
			if e.ID == c.fsuid {
				return a.masked(i, w)
			}
		case ACLGroupObj, ACLGroup:
			id := gid
			if e.Tag == ACLGroup {
				id = e.ID
			}
			if c.inGroup(id) {
				found = true
				if e.Perm&w == w {
					return a.masked(i, w)
				}
			}
		case ACLOther:
			if found || e.Perm&w != w {
				return aclDenied
			}
			return aclGranted
		}
	}
	return aclDenied // no other entry: Linux's -EIO, a denial here
}

// masked decides with entry i, limited by the mask that follows it.
func (a *ACL) masked(i int, w uint16) aclResult {
	p := a.Entries[i].Perm
	for _, e := range a.Entries[i+1:] {
		if e.Tag == ACLMask {
			p &= e.Perm
			break
		}
	}
	if p&w == w {
		return aclGranted
	}
	return aclDenied
}

// checkACL is check_acl for n, a node whose mode says it may have an
// access ACL (PermACL): what the ACL says of c's request, or aclNone
// without one (or when the file system has none, or fails to read it:
// the mode decides, as in Linux's RCU walk before it gives up).
func (c *creds) checkACL(n Node, gid uint32, mask int) aclResult {
	al, ok := n.(ACLer)
	if !ok {
		return aclNone
	}
	a, err := al.GetACL(ACLTypeAccess)
	if err != nil || a == nil {
		return aclNone
	}
	return a.permission(c, gid, mask)
}

// aclXattrType is posix_acl_type: the ACL type an xattr name stands for,
// or 0.
func aclXattrType(name string) int {
	switch name {
	case XattrACLAccess:
		return ACLTypeAccess
	case XattrACLDefault:
		return ACLTypeDefault
	}
	return 0
}

// getACL is vfs_get_acl: the ACL as an xattr value, ENODATA without one,
// EOPNOTSUPP on a file system without POSIX ACLs. Anyone may read it.
func getACL(al ACLer, typ int) ([]byte, error) {
	a, err := al.GetACL(typ)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, unix.ENODATA
	}
	return a.Xattr(), nil
}

// setACL is vfs_set_acl and vfs_remove_acl (data nil, remove set) for the
// calling process p on node n of mount m, after the mount's EROFS check:
// the value is decoded (EINVAL, EOPNOTSUPP), then, as set_posix_acl
// checks, an immutable or append-only file gives EPERM, a file system
// without ACLs EOPNOTSUPP, a default ACL on a non-directory EACCES (its
// removal succeeds), a caller that is neither the owner nor has
// CAP_FOWNER EPERM, and an ill-formed ACL EINVAL. An access ACL that the
// mode can express is stored as the mode alone (posix_acl_update_mode),
// and the set-group-ID bit goes unless the caller is in the file's group
// or has CAP_FSETID. The change runs under the node's directory lock if it
// is a directory, as Linux holds i_rwsem, so that a create in it sees
// the default ACL before or after, never half.
func (p *Proc) setACL(m *mount, n Node, al ACLer, typ int, data []byte, remove bool) error {
	var a *ACL
	if !remove {
		var err error
		if a, err = ParseACLXattr(data); err != nil {
			return err
		}
	}
	if isDir(n) {
		l := p.ns.lockDir(n)
		defer l.unlock()
	}
	mode, uid, gid, err := nodeAttrs(n)
	if err != nil {
		return err
	}
	if mode&(PermImmutable|PermAppend) != 0 {
		return errEPERM // may_write_xattr
	}
	if _, err := al.GetACL(typ); err != nil {
		return err // EOPNOTSUPP: !IS_POSIXACL
	}
	if typ == ACLTypeDefault && mode&unix.S_IFMT != unix.S_IFDIR {
		if a != nil {
			return errEACCES
		}
		return nil
	}
	c := p.cred.Load()
	if !c.ownerOrCapable(uid) {
		return errEPERM
	}
	if a != nil {
		if err := a.Valid(); err != nil {
			return err
		}
	}
	newMode := mode & 0o7777
	if typ == ACLTypeAccess {
		if a != nil {
			var equiv bool
			if newMode, equiv = a.equivMode(newMode); equiv {
				a = nil
			}
		}
		if !c.inGroupOrCapable(gid) {
			newMode &^= unix.S_ISGID
		}
	}
	return al.SetACL(typ, a, newMode, c.fsCred())
}

// chmodACL is posix_acl_chmod, after a chmod of n to mode: the access
// ACL's owner, mask and other entries follow the new mode.
func chmodACL(n Node, mode uint32, c *creds) error {
	al, ok := n.(ACLer)
	if !ok {
		return nil
	}
	a, err := al.GetACL(ACLTypeAccess)
	if err != nil || a == nil {
		return nil
	}
	return al.SetACL(ACLTypeAccess, a.chmod(mode), mode&0o7777, c.fsCred())
}

// InheritedACL is what posix_acl_create gives a node created in a
// directory with a default ACL: its access ACL (nil when its mode says it
// all) and, for a directory, its default ACL (the parent's).
type InheritedACL struct {
	Access, Default *ACL
}

// createMode applies to mode, the permission bits of a node of type typ
// that c creates in dir, the umask or, in a directory with a default
// ACL, the ACL instead (Linux's mode_strip_umask and posix_acl_create).
// It returns the bits and the Cred for the driver call, which carries
// the ACLs the node inherits. It runs under dir's lock, which a change of
// dir's default ACL also takes.
func (p *Proc) createMode(c *creds, dir Node, typ, mode uint32) (uint32, Cred, error) {
	fc := c.fsCred()
	if typ != unix.S_IFLNK {
		if al, ok := dir.(ACLer); ok {
			d, err := al.GetACL(ACLTypeDefault)
			if err != nil && err != errEOPNOTSUP && err != unix.EOPNOTSUPP {
				return 0, Cred{}, err
			}
			if d != nil {
				acc, m := d.createMasq(mode)
				in := &InheritedACL{Access: acc}
				if typ == unix.S_IFDIR {
					in.Default = d
				}
				fc.ACL = in
				return m, fc, nil
			}
		}
	}
	return mode &^ p.umask.Load(), fc, nil
}
