package disk

// Superblock and group descriptors, Documentation/filesystems/ext4/super.rst
// and group_descr.rst. Everything read here is validated against the device
// size before it sizes an allocation.

import (
	"errors"

	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"

	"github.com/iovfs/iovfs/block"
)

const (
	sbOffset = 1024
	sbSize   = 1024
	sbMagic  = 0xEF53

	rootIno = 2
)

// Feature bits (ext4.h EXT4_FEATURE_*).
const (
	compatHasJournal   = 0x4
	compatSparseSuper2 = 0x200

	incompatCompression = 0x1
	incompatFiletype    = 0x2
	incompatRecover     = 0x4
	incompatJournalDev  = 0x8
	incompatMetaBG      = 0x10
	incompatExtents     = 0x40
	incompat64bit       = 0x80
	incompatMMP         = 0x100
	incompatFlexBG      = 0x200
	incompatEAInode     = 0x400
	incompatDirData     = 0x1000
	incompatCsumSeed    = 0x2000
	incompatLargeDir    = 0x4000
	incompatInlineData  = 0x8000
	incompatEncrypt     = 0x10000
	incompatCasefold    = 0x20000

	rocompatSparseSuper  = 0x1
	rocompatLargeFile    = 0x2
	rocompatHugeFile     = 0x8
	rocompatGdtCsum      = 0x10
	rocompatDirNlink     = 0x20
	rocompatExtraIsize   = 0x40
	rocompatBigalloc     = 0x200
	rocompatMetadataCsum = 0x400
)

// supportedIncompat is what Open accepts. RECOVER is accepted with a
// warning: the journal is not replayed, as with Linux's ro,noload.
const supportedIncompat = incompatFiletype | incompatRecover | incompatMetaBG |
	incompatExtents | incompat64bit | incompatMMP | incompatFlexBG |
	incompatEAInode | incompatCsumSeed | incompatLargeDir | incompatInlineData

var incompatNames = []struct {
	bit  uint32
	name string
}{
	{incompatCompression, "compression"},
	{incompatFiletype, "filetype"},
	{incompatRecover, "needs_recovery"},
	{incompatJournalDev, "journal_dev"},
	{incompatMetaBG, "meta_bg"},
	{incompatExtents, "extent"},
	{incompat64bit, "64bit"},
	{incompatMMP, "mmp"},
	{incompatFlexBG, "flex_bg"},
	{incompatEAInode, "ea_inode"},
	{incompatDirData, "dirdata"},
	{incompatCsumSeed, "metadata_csum_seed"},
	{incompatLargeDir, "large_dir"},
	{incompatInlineData, "inline_data"},
	{incompatEncrypt, "encrypt"},
	{incompatCasefold, "casefold"},
}

// Options tune Open.
type Options struct {
	// NoChecksums skips metadata_csum verification (the superblock's
	// included). Structural checks still apply.
	NoChecksums bool
	// Logf receives warnings, such as a journal that needs recovery or a
	// group descriptor checksum mismatch. Nil discards them.
	Logf func(format string, args ...any)
	// InodeCache bounds the number of parsed inodes kept; 0 means 1024.
	InodeCache int
	// Cache, if not nil, is the buffer cache that metadata blocks (group
	// descriptors, inode tables, extent tree, directory, htree and xattr
	// blocks) are read through, from CacheDevice, the block device under
	// dev; see bcache.go. File data never goes through it.
	Cache       *block.Cache
	CacheDevice block.Device
	// NoLoad (the noload and norecovery mount options) makes OpenWriter
	// leave the journal alone: no replay (a volume that needs one is
	// refused), changes written in place without a log. Open never
	// replays.
	NoLoad bool
	// unreplayed lets OpenWriter with NoLoad open a volume that needs
	// recovery: a read-only noload mount's orphan cleanup, which the
	// kernel runs on the volume as it is (rwrecover.go).
	unreplayed bool
	// NoJournalChecksum (the nojournal_checksum mount option): a
	// read-write mount's journal is written without checksums, also on a
	// metadata_csum volume, whose journal otherwise gets csum v3
	// (rwsuper.go).
	NoJournalChecksum bool
	// readOnlyMount: the Writer of a read-only mount's orphan cleanup,
	// which does none of a mount's superblock bookkeeping (rwsuper.go).
	readOnlyMount bool
	// beside: the volume reads beside a Writer (Writer.Reader), whose
	// mount sets needs_recovery itself: no warning about it.
	beside bool
}

// Volume is an open, read-only ext2/3/4 file system. All its methods are
// safe for concurrent use; the Device is only ever read.
type Volume struct {
	dev Device
	opt Options

	bs, bsBits   uint64 // block size and its log2
	clusterSize  uint64 // bytes; bs unless bigalloc
	blocks       uint64 // s_blocks_count
	firstData    uint64 // s_first_data_block
	inodes       uint32 // s_inodes_count
	ipg          uint32 // inodes per group
	bpg          uint32 // blocks per group
	inodeSize    uint32
	firstIno     uint32
	groups       uint32
	descSize     uint32
	itable       []uint64 // inode table block, per group
	itableBlocks uint64   // blocks in one group's inode table

	compat, incompat, rocompat uint32

	csum     bool   // verify metadata_csum
	csumSeed uint32 // crc32c(~0, uuid) or s_checksum_seed

	sbBackupBGs [2]uint32 // sparse_super2 backup groups
	firstMetaBG uint32

	hashSeed     [4]uint32
	hashUnsigned bool // EXT2_FLAGS_UNSIGNED_HASH
	// defHashVersion is s_def_hash_version, the hash of directories
	// listed by hash without an index (ext4_htree_fill_tree).
	defHashVersion uint8
	linuxOS        bool // s_creator_os == Linux: osd2 layout, inode checksums

	info VolumeInfo

	bufs sync.Pool // *[]byte of bs bytes

	// meta is the buffer cache's view of the device, or nil.
	meta *block.View

	// openUnlinked, set by a Writer before use, reports whether inode
	// ino is unlinked but still open (its links count 0 is then valid).
	openUnlinked func(ino uint32) bool

	// mu protects icache.
	mu     sync.Mutex
	icache map[uint32]*Inode
	imax   int

	// live is the Writer whose changes the volume reads beside (live.go),
	// nil for any other volume.
	live *Writer
	// refMu protects refs, and busy and began, the inodes the live
	// Writer's running operation has begun and their Refs (live.go).
	refMu sync.Mutex
	refs  map[uint32]*Ref
	busy  map[uint32]struct{}
	began []*Ref
}

// VolumeInfo is what statfs(2) needs, from the superblock.
type VolumeInfo struct {
	BlockSize    uint32
	Blocks       uint64
	FreeBlocks   uint64
	Inodes       uint32
	FreeInodes   uint32
	UUID         [16]byte
	Label        string
	NameMax      uint32 // 255
	NeedsRecover bool   // the journal was not replayed
}

// Open reads and validates the superblock and group descriptors of dev.
//
// It fails with a *FeatureError (EINVAL) for an incompatible feature it does
// not implement, with EINVAL if dev holds no ext2/3/4 file system, and with a
// *CorruptError (EUCLEAN or EBADMSG) for damage. A journal that needs
// recovery is not replayed; Open warns through Options.Logf and mounts the
// last checkpointed state, as Linux does with ro,noload.
func Open(dev Device, opt Options) (*Volume, error) {
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	if opt.InodeCache <= 0 {
		opt.InodeCache = 1024
	}
	v := &Volume{dev: dev, opt: opt, icache: make(map[uint32]*Inode), imax: opt.InodeCache}
	if dev.Size() < sbOffset+sbSize {
		return nil, fmt.Errorf("ext4: device too small for a superblock: %w", syscall.EINVAL)
	}
	sb := make([]byte, sbSize)
	if err := readFull(dev, sb, sbOffset); err != nil {
		return nil, err
	}
	if err := v.parseSuper(sb); err != nil {
		return nil, err
	}
	v.bufs.New = func() any { b := make([]byte, v.bs); return &b }
	if opt.Cache != nil && opt.CacheDevice != nil {
		v.meta = opt.Cache.View(opt.CacheDevice, int(v.bs))
	}
	if err := v.readGroupDescs(); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

func readFull(dev io.ReaderAt, p []byte, off int64) error {
	n, err := dev.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("ext4: short read at %d: %w", off, syscall.EIO)
	}
	return err
}

func (v *Volume) parseSuper(sb []byte) error {
	if le16(sb, 0x38) != sbMagic {
		return fmt.Errorf("ext4: no ext2/3/4 superblock (bad magic): %w", syscall.EINVAL)
	}
	v.compat = le32(sb, 0x5C)
	v.incompat = le32(sb, 0x60)
	v.rocompat = le32(sb, 0x64)
	rev := le32(sb, 0x4C)
	if rev == 0 {
		// Revision 0 has no feature fields in use.
		v.compat, v.incompat, v.rocompat = 0, 0, 0
	}
	if bad := v.incompat &^ supportedIncompat; bad != 0 {
		var names []string
		for _, f := range incompatNames {
			if bad&f.bit != 0 {
				names = append(names, f.name)
				bad &^= f.bit
			}
		}
		if bad != 0 {
			names = append(names, fmt.Sprintf("unknown(%#x)", bad))
		}
		return &FeatureError{Feature: strings.Join(names, ",")}
	}
	if v.rocompat&rocompatMetadataCsum != 0 {
		if sb[0x175] != 1 {
			return &FeatureError{Feature: fmt.Sprintf("metadata_csum type %d", sb[0x175])}
		}
		v.csum = !v.opt.NoChecksums
		if v.incompat&incompatCsumSeed != 0 {
			v.csumSeed = le32(sb, 0x270)
		} else {
			v.csumSeed = crc32c(^uint32(0), sb[0x68:0x78])
		}
		if v.csum {
			if want, got := le32(sb, 0x3FC), crc32c(^uint32(0), sb[:0x3FC]); want != got {
				return badCsum(0, "superblock")
			}
		}
	}

	logbs := le32(sb, 0x18)
	if logbs > 6 {
		return corrupt(0, "superblock: block size 2^(10+%d) out of range", logbs)
	}
	v.bsBits = 10 + uint64(logbs)
	v.bs = 1 << v.bsBits
	v.blocks = uint64(le32(sb, 0x4))
	v.inodes = le32(sb, 0x0)
	v.firstData = uint64(le32(sb, 0x14))
	v.bpg = le32(sb, 0x20)
	v.ipg = le32(sb, 0x28)
	v.inodeSize = 128
	v.firstIno = 11
	if rev > 0 {
		v.inodeSize = uint32(le16(sb, 0x58))
		v.firstIno = le32(sb, 0x54)
	}
	if v.incompat&incompat64bit != 0 {
		v.blocks |= uint64(le32(sb, 0x150)) << 32
		v.descSize = uint32(le16(sb, 0xFE))
		if v.descSize < 64 || v.descSize > 1024 || v.descSize&(v.descSize-1) != 0 {
			return corrupt(0, "superblock: group descriptor size %d invalid for 64bit", v.descSize)
		}
	} else {
		v.descSize = 32
	}
	if v.inodeSize < 128 || uint64(v.inodeSize) > v.bs || v.inodeSize&(v.inodeSize-1) != 0 {
		return corrupt(0, "superblock: inode size %d invalid", v.inodeSize)
	}
	cpg := uint64(v.bpg) // clusters per group
	if v.rocompat&rocompatBigalloc != 0 {
		cpg = uint64(le32(sb, 0x24))
	}
	if v.bpg == 0 || cpg == 0 || cpg > 8*v.bs {
		return corrupt(0, "superblock: %d blocks per group invalid", v.bpg)
	}
	if v.ipg == 0 || uint64(v.ipg) > 8*v.bs || uint64(v.ipg) < v.bs/uint64(v.inodeSize) {
		return corrupt(0, "superblock: %d inodes per group invalid", v.ipg)
	}
	if v.blocks == 0 || v.firstData >= v.blocks || (v.bs == 1024 && v.firstData == 0 && v.rocompat&rocompatBigalloc == 0) {
		return corrupt(0, "superblock: first data block %d, %d blocks", v.firstData, v.blocks)
	}
	if v.blocks > uint64(v.dev.Size())>>v.bsBits {
		return corrupt(0, "superblock: bad geometry: %d blocks exceed the device (%d bytes)", v.blocks, v.dev.Size())
	}
	groups := (v.blocks - v.firstData + uint64(v.bpg) - 1) / uint64(v.bpg)
	if groups*uint64(v.ipg) != uint64(v.inodes) {
		return corrupt(0, "superblock: inodes count %d != %d groups * %d", v.inodes, groups, v.ipg)
	}
	v.groups = uint32(groups)
	if v.firstIno < rootIno+1 || v.firstIno > v.inodes {
		return corrupt(0, "superblock: first inode %d invalid", v.firstIno)
	}
	v.clusterSize = v.bs
	if v.rocompat&rocompatBigalloc != 0 {
		lc := le32(sb, 0x1C)
		if lc < logbs || lc > logbs+16 {
			return corrupt(0, "superblock: cluster size 2^(10+%d) invalid", lc)
		}
		v.clusterSize = 1 << (10 + lc)
		if cpg*(v.clusterSize/v.bs) != uint64(v.bpg) {
			return corrupt(0, "superblock: %d blocks per group for %d clusters", v.bpg, cpg)
		}
	}
	v.itableBlocks = (uint64(v.ipg)*uint64(v.inodeSize) + v.bs - 1) / v.bs

	for i := range v.hashSeed {
		v.hashSeed[i] = le32(sb, 0xEC+4*i)
	}
	v.hashUnsigned = le32(sb, 0x160)&0x2 != 0
	v.defHashVersion = sb[0xFC]
	v.linuxOS = le32(sb, 0x48) == 0

	v.info = VolumeInfo{
		BlockSize:    uint32(v.bs),
		Blocks:       v.blocks,
		FreeBlocks:   uint64(le32(sb, 0xC)),
		Inodes:       v.inodes,
		FreeInodes:   le32(sb, 0x10),
		Label:        strings.TrimRight(string(sb[0x78:0x88]), "\x00"),
		NameMax:      255,
		NeedsRecover: v.incompat&incompatRecover != 0,
	}
	if v.incompat&incompat64bit != 0 {
		v.info.FreeBlocks |= uint64(le32(sb, 0x158)) << 32
	}
	copy(v.info.UUID[:], sb[0x68:0x78])
	if v.incompat&incompatRecover != 0 && !v.opt.beside {
		v.opt.Logf("ext4: journal needs recovery; mounting read-only without replay (noload)")
	}
	v.sbBackupBGs = [2]uint32{le32(sb, 0x24C), le32(sb, 0x250)}
	v.firstMetaBG = le32(sb, 0x104)
	return nil
}
