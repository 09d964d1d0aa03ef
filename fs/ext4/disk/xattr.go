package disk

// Extended attributes, Documentation/filesystems/ext4/attributes.rst: in the
// inode body after i_extra_isize, and in one block named by i_file_acl.

import (
	"encoding/binary"
	"strings"
	"syscall"
)

const (
	xattrMagic   = 0xEA020000
	xattrSizeMax = 65536 // XATTR_SIZE_MAX
)

// Name indexes (EXT4_XATTR_INDEX_*).
const (
	xUser       = 1
	xACLAccess  = 2
	xACLDefault = 3
	xTrusted    = 4
	xSecurity   = 6
	xSystem     = 7
	xHurd       = 10
)

// xattrPrefixes are the indexes Linux lists, with their name prefixes; the
// ACL indexes have empty names. system.data (inline data) and the other
// indexes have no listing handler in Linux and stay hidden.
var xattrPrefixes = map[uint8]string{
	xUser:       "user.",
	xACLAccess:  "system.posix_acl_access",
	xACLDefault: "system.posix_acl_default",
	xTrusted:    "trusted.",
	xSecurity:   "security.",
	xHurd:       "gnu.",
}

type xattr struct {
	index uint8
	name  string
	value []byte // nil when stored in an EA inode
	inum  uint32 // EA inode holding the value
	size  uint32
}

// xattrs returns the inode's attributes: body first, then the block, the
// order Linux lists them in.
func (v *Volume) xattrs(in *Inode) ([]xattr, error) {
	var out []xattr
	start := in.extraEnd
	if in.extraEnd > 128 && start+4 <= len(in.raw) && le32(in.raw, start) == xattrMagic {
		base := in.raw[start+4:]
		var err error
		out, err = v.parseXattrs(in, base, base, out, "in-inode xattrs")
		if err != nil {
			return nil, err
		}
	}
	if in.xattrBlk != 0 {
		bp := v.getBuf()
		defer v.putBuf(bp)
		b := *bp
		if err := v.readBlock(in.xattrBlk, b); err != nil {
			return nil, err
		}
		if le32(b, 0) != xattrMagic || le32(b, 8) != 1 {
			return nil, corrupt(in.Ino, "xattr block %d: bad header", in.xattrBlk)
		}
		if v.csum {
			var nr [8]byte
			binary.LittleEndian.PutUint64(nr[:], in.xattrBlk)
			c := crc32c(v.csumSeed, nr[:])
			c = crc32c(c, b[:0x10])
			c = crc32c(c, zero8[:4])
			c = crc32c(c, b[0x14:v.bs])
			if c != le32(b, 0x10) {
				return nil, badCsum(in.Ino, "xattr block %d", in.xattrBlk)
			}
		}
		var err error
		// Values in a block are offsets from the block start; the entries
		// follow the 32-byte header.
		out, err = v.parseXattrs(in, b[32:v.bs], b[:v.bs], out, "xattr block")
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseXattrs reads the entry table at ents (values relative to vals) and
// appends copies of the entries to out. Each entry is at least 16 bytes, so
// the walk ends within len(ents)/16 steps.
func (v *Volume) parseXattrs(in *Inode, ents, vals []byte, out []xattr, where string) ([]xattr, error) {
	off := 0
	for {
		if off+4 > len(ents) {
			return nil, corrupt(in.Ino, "%s: entries run off the end", where)
		}
		if le32(ents, off) == 0 {
			return out, nil
		}
		if off+16 > len(ents) {
			return nil, corrupt(in.Ino, "%s: truncated entry", where)
		}
		nlen := int(ents[off])
		size := (16 + nlen + 3) &^ 3
		if off+16+nlen > len(ents) {
			return nil, corrupt(in.Ino, "%s: entry name runs off the end", where)
		}
		x := xattr{
			index: ents[off+1],
			name:  string(ents[off+16 : off+16+nlen]),
			inum:  le32(ents, off+4),
			size:  le32(ents, off+8),
		}
		voff := int(le16(ents, off+2))
		if x.size > xattrSizeMax {
			return nil, corrupt(in.Ino, "%s: value size %d too large", where, x.size)
		}
		if x.inum != 0 {
			if v.incompat&incompatEAInode == 0 {
				return nil, corrupt(in.Ino, "%s: value inode without the ea_inode feature", where)
			}
		} else {
			if voff+int(x.size) > len(vals) {
				return nil, corrupt(in.Ino, "%s: value out of bounds", where)
			}
			x.value = vals[voff : voff+int(x.size) : voff+int(x.size)]
			x.value = append([]byte(nil), x.value...)
		}
		out = append(out, x)
		off += size
	}
}

// ListXattr returns the attribute names of in as Linux's listxattr(2)
// shows them ("user.foo", "security.selinux", "system.posix_acl_access").
func (v *Volume) ListXattr(in *Inode) ([]string, error) {
	xs, err := v.xattrs(in)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, x := range xs {
		p, ok := xattrPrefixes[x.index]
		if !ok {
			continue
		}
		if x.index == xACLAccess || x.index == xACLDefault {
			names = append(names, p)
		} else {
			names = append(names, p+x.name)
		}
	}
	return names, nil
}

// GetXattr returns the value of the attribute called name (a Linux name
// such as "user.foo"). A missing attribute is ENODATA; a name in a namespace
// ext4 does not serve is EOPNOTSUPP. POSIX ACLs are converted from ext4's
// compact format to the system.posix_acl_* xattr format, as Linux does.
func (v *Volume) GetXattr(in *Inode, name string) ([]byte, error) {
	var index uint8
	var suffix string
	switch {
	case name == "system.posix_acl_access":
		index = xACLAccess
	case name == "system.posix_acl_default":
		index = xACLDefault
	default:
		for i, p := range xattrPrefixes {
			if i != xACLAccess && i != xACLDefault && strings.HasPrefix(name, p) && len(name) > len(p) {
				index, suffix = i, name[len(p):]
				break
			}
		}
	}
	if index == 0 {
		return nil, syscall.EOPNOTSUPP
	}
	val, err := v.getXattr(in, index, suffix)
	if err != nil {
		return nil, err
	}
	if index == xACLAccess || index == xACLDefault {
		return aclToXattr(in.Ino, val)
	}
	return val, nil
}

func (v *Volume) getXattr(in *Inode, index uint8, name string) ([]byte, error) {
	xs, err := v.xattrs(in)
	if err != nil {
		return nil, err
	}
	for _, x := range xs {
		if x.index != index || x.name != name {
			continue
		}
		if x.inum == 0 {
			return x.value, nil
		}
		return v.eaInodeValue(in, x)
	}
	return nil, syscall.ENODATA
}

// eaInodeValue reads a value kept in its own inode (ea_inode feature).
func (v *Volume) eaInodeValue(in *Inode, x xattr) ([]byte, error) {
	if x.inum == in.Ino {
		return nil, corrupt(in.Ino, "xattr value inode refers to itself")
	}
	ea, err := v.Inode(x.inum)
	if err != nil {
		return nil, err
	}
	// An EA inode's value lives in its blocks (ext4_xattr_inode_read); one
	// with inline data could chain back through system.data without end.
	if ea.Flags&FlagEAInode == 0 || ea.Flags&FlagInlineData != 0 || !ea.IsRegular() || ea.Size != uint64(x.size) {
		return nil, corrupt(in.Ino, "xattr value inode %d invalid", x.inum)
	}
	buf := make([]byte, x.size)
	n, err := v.ReadAt(ea, nil, buf, 0)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// aclToXattr converts ext4's on-disk ACL (version 1, short entries for the
// owner/group/mask/other tags) into the posix_acl_xattr format (version 2,
// 8-byte entries, ACL_UNDEFINED_ID for tags without an id).
func aclToXattr(ino uint32, b []byte) ([]byte, error) {
	if len(b) < 4 || le32(b, 0) != 1 {
		return nil, syscall.EINVAL
	}
	out := binary.LittleEndian.AppendUint32(nil, 2)
	for p := 4; p < len(b); {
		if p+4 > len(b) {
			return nil, syscall.EINVAL
		}
		tag, perm := le16(b, p), le16(b, p+2)
		id := uint32(0xFFFFFFFF)
		switch tag {
		case 0x01, 0x04, 0x10, 0x20: // USER_OBJ, GROUP_OBJ, MASK, OTHER
			p += 4
		case 0x02, 0x08: // USER, GROUP
			if p+8 > len(b) {
				return nil, syscall.EINVAL
			}
			id = le32(b, p+4)
			p += 8
		default:
			return nil, syscall.EINVAL
		}
		out = binary.LittleEndian.AppendUint16(out, tag)
		out = binary.LittleEndian.AppendUint16(out, perm)
		out = binary.LittleEndian.AppendUint32(out, id)
	}
	return out, nil
}

// inlineData returns the bytes of an inline_data inode (the 60 bytes of
// i_block followed by the system.data value) or of a fast symlink.
func (v *Volume) InlineData(in *Inode) ([]byte, error) {
	ib := in.iblock()
	if in.Flags&FlagInlineData == 0 {
		return ib, nil
	}
	if in.Size <= 60 {
		return ib, nil
	}
	val, err := v.getXattr(in, xSystem, "data")
	if err == syscall.ENODATA {
		val, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	data := make([]byte, 0, 60+len(val))
	data = append(data, ib...)
	return append(data, val...), nil
}
