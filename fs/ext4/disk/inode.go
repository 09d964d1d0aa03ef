package disk

// Inodes, Documentation/filesystems/ext4/inodes.rst. A parsed Inode is
// immutable and may be shared between goroutines; Volume caches a bounded
// number of them.

import (
	"time"
)

// File type bits of Mode (S_IFMT), Linux values.
const (
	S_IFMT   = 0xF000
	S_IFSOCK = 0xC000
	S_IFLNK  = 0xA000
	S_IFREG  = 0x8000
	S_IFBLK  = 0x6000
	S_IFDIR  = 0x4000
	S_IFCHR  = 0x2000
	S_IFIFO  = 0x1000
)

// Inode flags (EXT4_*_FL) the reader acts on.
const (
	FlagIndex      = 0x1000     // hashed-indexed directory
	FlagHugeFile   = 0x40000    // i_blocks counts file system blocks
	FlagExtents    = 0x80000    // i_block holds an extent tree
	FlagEAInode    = 0x200000   // inode holds a large xattr value
	FlagInlineData = 0x10000000 // data lives in i_block and system.data
)

const maxExtentDepth = 5 // EXT4_MAX_EXTENT_DEPTH

// Timespec is a timestamp with nanosecond precision.
type Timespec struct {
	Sec  int64
	Nsec int64
}

// Time converts ts to a time.Time.
func (ts Timespec) Time() time.Time { return time.Unix(ts.Sec, ts.Nsec) }

// Inode is a parsed, validated on-disk inode.
type Inode struct {
	Ino        uint32
	Mode       uint32 // st_mode: S_IFMT bits and permissions
	Nlink      uint32
	Uid, Gid   uint32 // with the high 16 bits
	Size       uint64 // i_size_lo | i_size_high<<32
	Blocks     uint64 // st_blocks as Linux's stat reports it: 512-byte units, huge_file aware, inline data counted
	Atime      Timespec
	Mtime      Timespec
	Ctime      Timespec
	Crtime     Timespec // valid only if HasCrtime
	HasCrtime  bool
	Flags      uint32 // EXT4_*_FL
	Generation uint32
	Rdev       uint64 // Linux dev_t for character and block devices

	raw      []byte // the on-disk inode, inode_size bytes
	extraEnd int    // 128 + i_extra_isize: start of the in-inode xattr area
	xattrBlk uint64 // i_file_acl
	csumSeed uint32 // crc32c(csum_seed, ino, generation)
	fast     bool   // fast symlink: the target is in i_block
}

// IsDir reports whether in is a directory.
func (in *Inode) IsDir() bool { return in.Mode&S_IFMT == S_IFDIR }

// IsRegular reports whether in is a regular file.
func (in *Inode) IsRegular() bool { return in.Mode&S_IFMT == S_IFREG }

// IsSymlink reports whether in is a symbolic link.
func (in *Inode) IsSymlink() bool { return in.Mode&S_IFMT == S_IFLNK }

// iblock returns the 60-byte i_block area.
func (in *Inode) iblock() []byte { return in.raw[0x28:0x64] }

// Inode returns inode ino, parsed and (with metadata_csum) verified.
//
// Errors: EUCLEAN for an inode number out of range, a deleted inode (link
// count 0) or a malformed inode; EBADMSG for a checksum mismatch; the
// device's error for an I/O failure. The result is shared and must not be
// modified.
func (v *Volume) Inode(ino uint32) (*Inode, error) {
	if v.live != nil {
		return v.loadInode(ino) // no cache beside a Writer: Refs keep its inodes (live.go)
	}
	v.mu.Lock()
	in := v.icache[ino]
	v.mu.Unlock()
	if in != nil {
		return in, nil
	}
	in, err := v.loadInode(ino)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if len(v.icache) >= v.imax {
		// Evict an arbitrary eighth; map order is random enough.
		n := v.imax/8 + 1
		for k := range v.icache {
			delete(v.icache, k)
			if n--; n == 0 {
				break
			}
		}
	}
	v.icache[ino] = in
	v.mu.Unlock()
	return in, nil
}

func (v *Volume) loadInode(ino uint32) (*Inode, error) {
	if ino == 0 || ino > v.inodes {
		return nil, corrupt(ino, "inode number out of range (1..%d)", v.inodes)
	}
	g := (ino - 1) / v.ipg
	idx := uint64((ino - 1) % v.ipg)
	raw := make([]byte, v.inodeSize)
	if err := v.readMeta(raw, int64(v.itable[g]<<v.bsBits+idx*uint64(v.inodeSize))); err != nil {
		return nil, err
	}
	return v.parseInode(ino, raw)
}

// parseInode validates raw, the inode_size bytes of inode ino, the way
// the kernel's __ext4_iget does. It keeps raw.
func (v *Volume) parseInode(ino uint32, raw []byte) (*Inode, error) {
	in := &Inode{Ino: ino, raw: raw, extraEnd: 128}
	if v.inodeSize > 128 {
		extra := int(le16(raw, 0x80))
		if 128+extra > int(v.inodeSize) || extra&3 != 0 {
			return nil, corrupt(ino, "bad extra_isize %d (inode size %d)", extra, v.inodeSize)
		}
		in.extraEnd = 128 + extra
	}
	in.Generation = le32(raw, 0x64)
	if v.csum {
		in.csumSeed = crc32cU32(crc32cU32(v.csumSeed, ino), in.Generation)
		if v.linuxOS && !v.inodeCsumOK(in) {
			return nil, badCsum(ino, "inode")
		}
	}
	in.Mode = uint32(le16(raw, 0x0))
	in.Nlink = uint32(le16(raw, 0x1A))
	in.Uid = uint32(le16(raw, 0x2))
	in.Gid = uint32(le16(raw, 0x18))
	if v.linuxOS {
		in.Uid |= uint32(le16(raw, 0x78)) << 16
		in.Gid |= uint32(le16(raw, 0x7A)) << 16
	}
	in.Size = uint64(le32(raw, 0x4)) | uint64(le32(raw, 0x6C))<<32
	in.Flags = le32(raw, 0x20)
	in.Blocks = uint64(le32(raw, 0x1C))
	if v.rocompat&rocompatHugeFile != 0 && v.linuxOS {
		in.Blocks |= uint64(le16(raw, 0x74)) << 32
		if in.Flags&FlagHugeFile != 0 {
			in.Blocks <<= v.bsBits - 9
		}
	}
	if in.Flags&FlagInlineData != 0 && in.Mode&S_IFMT == S_IFREG {
		// ext4_file_getattr charges a regular file's inline data at least
		// one sector, so that tools do not take it for sparse.
		in.Blocks += (in.Size + 511) >> 9
	}
	in.xattrBlk = uint64(le32(raw, 0x68))
	if v.linuxOS && v.incompat&incompat64bit != 0 {
		in.xattrBlk |= uint64(le16(raw, 0x76)) << 32
	}
	in.Ctime = in.xtime(0x0C, 0x84)
	in.Mtime = in.xtime(0x10, 0x88)
	in.Atime = in.xtime(0x08, 0x8C)
	if in.fits(0x94, 4) {
		in.Crtime = in.xtime(0x90, 0x94)
		in.HasCrtime = true
	}

	if in.Nlink == 0 && (v.openUnlinked == nil || !v.openUnlinked(ino)) {
		return nil, corrupt(ino, "deleted inode referenced (links count 0)")
	}
	switch in.Mode & S_IFMT {
	case S_IFREG, S_IFDIR, S_IFLNK:
	case S_IFCHR, S_IFBLK:
		in.Rdev = decodeDev(le32(raw, 0x28), le32(raw, 0x2C))
	case S_IFIFO, S_IFSOCK:
	default:
		return nil, corrupt(ino, "bogus i_mode %#o", in.Mode)
	}
	if in.Size > 1<<62 {
		return nil, corrupt(ino, "bad i_size %d", in.Size)
	}
	if in.xattrBlk != 0 && (in.xattrBlk < v.firstData || in.xattrBlk >= v.blocks) {
		return nil, corrupt(ino, "bad extended attribute block %d", in.xattrBlk)
	}
	if in.Flags&FlagInlineData != 0 {
		if v.incompat&incompatInlineData == 0 {
			return nil, corrupt(ino, "inline_data flag without the inline_data feature")
		}
		if in.Flags&FlagExtents != 0 {
			return nil, corrupt(ino, "both inline_data and extents flags set")
		}
	}
	if in.IsSymlink() && in.Flags&FlagInlineData == 0 {
		if err := v.checkFastSymlink(in); err != nil {
			return nil, err
		}
	}
	if in.Flags&FlagExtents != 0 && in.hasData() {
		if err := checkExtentHeader(ino, in.iblock(), 4, -1); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// hasData reports whether i_block addresses data (not a device number or a
// fast symlink target).
func (in *Inode) hasData() bool {
	switch in.Mode & S_IFMT {
	case S_IFREG, S_IFDIR:
		return true
	case S_IFLNK:
		return !in.fastSymlink()
	}
	return false
}

// fits is EXT4_FITS_IN_INODE: does the extra field at off of size n lie
// within 128 + i_extra_isize?
func (in *Inode) fits(off, n int) bool { return off+n <= in.extraEnd }

// xtime decodes a timestamp and its _extra word: the low 2 bits extend the
// signed 32-bit seconds (epoch bits), the upper 30 are nanoseconds.
func (in *Inode) xtime(off, extraOff int) Timespec {
	ts := Timespec{Sec: int64(int32(le32(in.raw, off)))}
	if in.fits(extraOff, 4) {
		x := le32(in.raw, extraOff)
		ts.Sec += int64(x&3) << 32
		ts.Nsec = int64(x >> 2)
		if ts.Nsec > 999999999 {
			ts.Nsec = 999999999
		}
	}
	return ts
}

// inodeCsumOK checks ext4_inode_csum: crc32c over the whole inode with the
// checksum fields zeroed; only the low 16 bits when i_checksum_hi does not
// fit in the extra space.
func (v *Volume) inodeCsumOK(in *Inode) bool {
	raw := in.raw
	c := crc32c(in.csumSeed, raw[:0x7C])
	c = crc32c(c, zero8[:2])
	c = crc32c(c, raw[0x7E:128])
	want := uint32(le16(raw, 0x7C))
	if len(raw) > 128 {
		if in.fits(0x82, 2) {
			c = crc32c(c, raw[128:0x82])
			c = crc32c(c, zero8[:2])
			c = crc32c(c, raw[0x84:])
			want |= uint32(le16(raw, 0x82)) << 16
		} else {
			c = crc32c(c, raw[128:])
			c &= 0xFFFF
		}
	} else {
		c &= 0xFFFF
	}
	return c == want
}

// decodeDev reads a device number the way ext4_iget does: the old 16-bit
// encoding in i_block[0], else the new 32-bit one in i_block[1]; the result
// is Linux's 64-bit dev_t (makedev).
func decodeDev(b0, b1 uint32) uint64 {
	var major, minor uint64
	if b0 != 0 {
		major, minor = uint64(b0>>8&0xff), uint64(b0&0xff)
	} else {
		major = uint64(b1&0xfff00) >> 8
		minor = uint64(b1&0xff) | uint64(b1>>12&0xfff00)
	}
	return major&0xfff<<8 | major&^0xfff<<32 | minor&0xff | minor&^0xff<<12
}

// checkFastSymlink applies ext4_inode_is_fast_symlink: a symlink is fast
// when no blocks besides an xattr block are charged to it (or, for an
// EA-inode, when it is short). A fast target must be 1..59 bytes with a NUL
// right after it, as ext4_iget requires.
func (v *Volume) checkFastSymlink(in *Inode) error {
	if in.Flags&FlagEAInode != 0 {
		in.fast = in.Size != 0 && in.Size < 60
	} else {
		var ea uint64
		if in.xattrBlk != 0 {
			ea = v.clusterSize >> 9
		}
		in.fast = in.Blocks-ea == 0
	}
	if !in.fast {
		return nil
	}
	ib := in.iblock()
	if in.Size == 0 || in.Size >= 60 {
		return corrupt(in.Ino, "invalid fast symlink length %d", in.Size)
	}
	for i := 0; i < int(in.Size); i++ {
		if ib[i] == 0 {
			return corrupt(in.Ino, "invalid fast symlink length %d", in.Size)
		}
	}
	if ib[in.Size] != 0 {
		return corrupt(in.Ino, "invalid fast symlink length %d", in.Size)
	}
	return nil
}
