package jbd2

// The journal superblock and the log's place on the device
// (include/linux/jbd2.h, Documentation/filesystems/ext4/journal.rst).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"syscall"
)

// Block types of the journal header.
const (
	typeDescriptor = 1
	typeCommit     = 2
	typeSuperV1    = 3
	typeSuperV2    = 4
	typeRevoke     = 5
)

const magic = 0xC03B3998 // JBD2_MAGIC_NUMBER

// Tag flags.
const (
	flagEscape   = 1
	flagSameUUID = 2
	flagLastTag  = 8
)

// Feature bits of the journal superblock.
const (
	CompatChecksum = 0x1 // JBD2_FEATURE_COMPAT_CHECKSUM: v1 commit-block checksums

	IncompatRevoke      = 0x1
	Incompat64bit       = 0x2
	IncompatAsyncCommit = 0x4
	IncompatCsumV2      = 0x8
	IncompatCsumV3      = 0x10
	IncompatFastCommit  = 0x20
)

// supportedIncompat is what Open accepts.
const supportedIncompat = IncompatRevoke | Incompat64bit | IncompatCsumV2 | IncompatCsumV3

// ChecksumCRC32C is s_checksum_type for csum v2 and v3 (JBD2_CRC32C_CHKSUM).
const ChecksumCRC32C = 4

// Superblock fields.
const (
	sbBlockSize    = 0xC
	sbMaxLen       = 0x10
	sbFirst        = 0x14
	sbSequence     = 0x18
	sbStart        = 0x1C
	sbErrno        = 0x20
	sbCompat       = 0x24
	sbIncompat     = 0x28
	sbUUID         = 0x30
	sbChecksumType = 0x50
	sbChecksum     = 0xFC
	sbSize         = 1024
)

var be = binary.BigEndian

// Device is the block device the journal and the file system share.
// ReadAt and WriteAt have io.ReaderAt's and io.WriterAt's contracts and
// may be called concurrently; Flush makes completed writes durable (a
// device without a write cache returns nil).
type Device interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Flush() error
}

// An Extent maps Len blocks of the log, from log block Logical, to
// device blocks from Physical on.
type Extent struct {
	Logical, Physical, Len uint64
}

// Journal is an open journal: its superblock as last read or written,
// and where its blocks are. It is not safe for concurrent use.
type Journal struct {
	dev Device
	bs  int
	ext []Extent // sorted by Logical, covering [0, n)
	n   uint64   // blocks in the log area the extents cover

	sb       []byte // the superblock block, bs bytes
	first    uint32 // s_first
	maxlen   uint32 // s_maxlen, at most n
	seq      uint32 // the next transaction's id
	incompat uint32
	csum     int // 0, 2 or 3
	tagSize  int
	seed     uint32 // crc32c(~0, s_uuid)
}

// Open reads the journal superblock of the log whose blocks extents
// place on dev, in blocks of blockSize bytes. The extents must cover
// the log from block 0 without gaps.
//
// Errors: a *CorruptError (EUCLEAN) for a superblock that is not a
// jbd2 one or does not fit the extents; a *FeatureError (EINVAL) for an
// incompatible feature Open does not implement (async commits, fast
// commits, unknown bits); the device's errors.
func Open(dev Device, blockSize int, extents []Extent) (*Journal, error) {
	if blockSize < 1024 || blockSize > 65536 || blockSize&(blockSize-1) != 0 {
		return nil, corrupt("block size %d", blockSize)
	}
	ext := append([]Extent(nil), extents...)
	sort.Slice(ext, func(i, k int) bool { return ext[i].Logical < ext[k].Logical })
	var n uint64
	for _, e := range ext {
		if e.Logical != n || e.Len == 0 {
			return nil, corrupt("log blocks not contiguous at %d", n)
		}
		n += e.Len
	}
	if n < 4 {
		return nil, corrupt("log of %d blocks", n)
	}
	j := &Journal{dev: dev, bs: blockSize, ext: ext, n: n, sb: make([]byte, blockSize)}
	if err := j.readBlock(0, j.sb); err != nil {
		return nil, err
	}
	if be.Uint32(j.sb) != magic || (be.Uint32(j.sb[4:]) != typeSuperV1 && be.Uint32(j.sb[4:]) != typeSuperV2) {
		return nil, corrupt("bad superblock")
	}
	if bs := be.Uint32(j.sb[sbBlockSize:]); bs != uint32(blockSize) {
		return nil, corrupt("block size %d in a file system of %d", bs, blockSize)
	}
	j.maxlen = uint32(min(uint64(be.Uint32(j.sb[sbMaxLen:])), n))
	j.first = be.Uint32(j.sb[sbFirst:])
	j.seq = be.Uint32(j.sb[sbSequence:])
	if j.first == 0 || j.first >= j.maxlen {
		return nil, corrupt("first block %d of %d", j.first, j.maxlen)
	}
	var incompat uint32
	if j.Version() == 2 {
		incompat = be.Uint32(j.sb[sbIncompat:])
	}
	if bad := incompat &^ supportedIncompat; bad != 0 {
		return nil, &FeatureError{Feature: fmt.Sprintf("journal incompat %#x", bad)}
	}
	j.setFormat(incompat)
	j.seed = crc32c(^uint32(0), j.sb[sbUUID:sbUUID+16])
	if j.csum != 0 && crc32c(^uint32(0), withZero(j.sb[:sbSize], sbChecksum, 4)) != be.Uint32(j.sb[sbChecksum:]) {
		return nil, badCsum("superblock")
	}
	return j, nil
}

// setFormat sets the incompatible features and the log format that
// follows from them: the tag size and the checksums.
func (j *Journal) setFormat(incompat uint32) {
	j.incompat = incompat
	switch {
	case incompat&IncompatCsumV3 != 0:
		j.csum = 3
	case incompat&IncompatCsumV2 != 0:
		j.csum = 2
	default:
		j.csum = 0
	}
	// journal_tag_bytes
	switch {
	case j.csum == 3:
		j.tagSize = 16
	default:
		j.tagSize = 12
		if j.csum == 2 {
			j.tagSize += 2
		}
		if incompat&Incompat64bit == 0 {
			j.tagSize -= 4
		}
	}
}

// Version is the superblock's version, 1 or 2; only version 2 has
// feature words.
func (j *Journal) Version() int {
	if be.Uint32(j.sb[4:]) == typeSuperV2 {
		return 2
	}
	return 1
}

// Features returns the superblock's compatible and incompatible feature
// words.
func (j *Journal) Features() (compat, incompat uint32) {
	return be.Uint32(j.sb[sbCompat:]), j.incompat
}

// SetFeatures sets the feature words and, with csum v2 or v3, the
// checksum type: the next Commit and WriteSuper use that format, as a
// kernel's mount sets them before it writes (set_journal_csum_feature_set).
// A version 1 superblock has no feature words: EINVAL. So does an
// incompatible feature Open would refuse.
func (j *Journal) SetFeatures(compat, incompat uint32) error {
	if j.Version() != 2 || incompat&^supportedIncompat != 0 {
		return syscall.EINVAL
	}
	be.PutUint32(j.sb[sbCompat:], compat)
	be.PutUint32(j.sb[sbIncompat:], incompat)
	if incompat&(IncompatCsumV2|IncompatCsumV3) != 0 {
		j.sb[sbChecksumType] = ChecksumCRC32C
	}
	j.setFormat(incompat)
	return nil
}

// Start is s_start, the log block the first transaction to replay starts
// at; 0 when the log is empty.
func (j *Journal) Start() uint32 { return be.Uint32(j.sb[sbStart:]) }

// NeedsRecovery reports whether the log holds transactions to replay.
func (j *Journal) NeedsRecovery() bool { return j.Start() != 0 }

// Sequence is the id the next transaction gets.
func (j *Journal) Sequence() uint32 { return j.seq }

// SetSequence sets the id the next transaction gets.
func (j *Journal) SetSequence(seq uint32) { j.seq = seq }

// Errno is s_errno: a negative errno that an aborted journal recorded
// (jbd2_journal_abort), 0 if none.
func (j *Journal) Errno() int32 { return int32(be.Uint32(j.sb[sbErrno:])) }

// SetErrno sets s_errno in memory; WriteSuper stores it.
func (j *Journal) SetErrno(errno int32) { be.PutUint32(j.sb[sbErrno:], uint32(errno)) }

// BlockSize is the journal's block size.
func (j *Journal) BlockSize() int { return j.bs }

// Capacity is how many blocks one transaction may take in the log:
// descriptor, logged, revoke and commit blocks together.
func (j *Journal) Capacity() int { return int(j.maxlen - j.first) }

// Extents returns where the log's blocks are on the device.
func (j *Journal) Extents() []Extent { return append([]Extent(nil), j.ext...) }

// WriteSuper writes the superblock with s_start set to start and
// s_sequence to the next transaction's id, then flushes the device.
func (j *Journal) WriteSuper(start uint32) error {
	be.PutUint32(j.sb[sbSequence:], j.seq)
	be.PutUint32(j.sb[sbStart:], start)
	j.sealSuper(j.sb)
	if err := j.writeBlock(0, j.sb); err != nil {
		return err
	}
	return j.dev.Flush()
}

// sealSuper sets the superblock checksum of sb, with csum v2 or v3.
func (j *Journal) sealSuper(sb []byte) {
	if j.csum != 0 {
		be.PutUint32(sb[sbChecksum:], 0)
		be.PutUint32(sb[sbChecksum:], crc32c(^uint32(0), sb[:sbSize]))
	}
}

// Abort records errno (negative, as the kernel stores it) in the
// superblock on the device, leaving the rest of it as the device has it
// (jbd2_journal_abort's jbd2_journal_update_sb_errno): the log is left
// for the next mount to replay. It flushes the device.
func (j *Journal) Abort(errno int32) error {
	sb := make([]byte, j.bs)
	if err := j.readBlock(0, sb); err != nil {
		return err
	}
	be.PutUint32(sb[sbErrno:], uint32(errno))
	j.sealSuper(sb)
	if err := j.writeBlock(0, sb); err != nil {
		return err
	}
	return j.dev.Flush()
}

// devBlock is the device block of log block lb.
func (j *Journal) devBlock(lb uint64) uint64 {
	i := sort.Search(len(j.ext), func(i int) bool { return j.ext[i].Logical+j.ext[i].Len > lb })
	e := j.ext[i]
	return e.Physical + (lb - e.Logical)
}

func (j *Journal) readBlock(lb uint64, p []byte) error {
	return readFull(j.dev, p[:j.bs], int64(j.devBlock(lb))*int64(j.bs))
}

func (j *Journal) writeBlock(lb uint64, p []byte) error {
	return writeFull(j.dev, p[:j.bs], int64(j.devBlock(lb))*int64(j.bs))
}

func readFull(dev Device, p []byte, off int64) error {
	n, err := dev.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("jbd2: short read at %d: %w", off, syscall.EIO)
	}
	return err
}

func writeFull(dev Device, p []byte, off int64) error {
	n, err := dev.WriteAt(p, off)
	if err == nil && n < len(p) {
		err = syscall.EIO
	}
	return err
}

// withZero returns b with n bytes at off zeroed: a copy, b unchanged.
func withZero(b []byte, off, n int) []byte {
	c := append([]byte(nil), b...)
	clear(c[off : off+n])
	return c
}
