package disk

// Mount bookkeeping in the superblock: what Linux's ext4_setup_super
// writes at a read-write mount, ext4_put_super at its unmount,
// ext4_update_super at every superblock write and
// ext4_sample_last_mounted at the first open of a file.
//
//   - At the mount (OpenWriter, after the journal's replay), the journal
//     superblock's features become the kernel's (ext4_fill_super and
//     set_journal_csum_feature_set): 64bit on a 64bit volume; checksums
//     v3 (crc32c) on a metadata_csum one unless nojournal_checksum, none
//     otherwise (journal_checksum's v1 commit checksums on a volume
//     without metadata_csum are not written: see fs/ext4/README.md).
//   - At the mount, after that: s_state is
//     remembered; a warning is logged for a volume not cleanly unmounted,
//     one with errors, at its maximal mount count or past its check
//     interval; without a journal EXT4_VALID_FS is cleared while the
//     volume is in use (so that e2fsck -p checks a volume left by a
//     crash, as needs_recovery does for a journalled one); s_max_mnt_count
//     0 becomes EXT4_DFL_MAX_MNT_COUNT; s_mnt_count is incremented and
//     s_mtime set; with a journal and orphan_file, ORPHAN_PRESENT is set.
//   - At every superblock write: s_wtime, and s_kbytes_written (its value
//     at the mount plus the bytes the Writer has sent to the device
//     since, in KiB, as the kernel counts the block device's written
//     sectors).
//   - At Close: s_state is what it was at the mount, with EXT4_ERROR_FS
//     if an error was recorded since, and ORPHAN_PRESENT is cleared.
//   - At the first open of a regular file: s_last_mounted gets MountPoint
//     when it holds something else and fits in 63 bytes.
//
// A read-only mount's orphan cleanup (rwrecover.go) opens a Writer that
// does none of this, as the kernel's read-only mount does not.

import (
	"bytes"
	"encoding/binary"

	"github.com/iovfs/iovfs/fs/jbd2"
)

// Superblock fields of the mount bookkeeping (struct ext4_super_block).
const (
	sbMtime         = 0x2C
	sbWtime         = 0x30
	sbMntCount      = 0x34
	sbMaxMntCount   = 0x36
	sbLastcheck     = 0x40
	sbCheckinterval = 0x44
	sbLastMounted   = 0x88 // 64 bytes
	sbKbytesWritten = 0x178
	sbWtimeHi       = 0x274
	sbMtimeHi       = 0x275
	sbLastcheckHi   = 0x277

	stateValidFS   = 0x1 // EXT4_VALID_FS
	dflMaxMntCount = 20  // EXT4_DFL_MAX_MNT_COUNT
)

// setTstamp is ext4_update_tstamp: the low 32 bits at lo, bits 32-39 in
// the byte at hi.
func setTstamp(sb []byte, lo, hi int, sec int64) {
	binary.LittleEndian.PutUint32(sb[lo:], uint32(sec))
	sb[hi] = byte(sec >> 32)
}

// getTstamp is ext4_get_tstamp.
func getTstamp(sb []byte, lo, hi int) int64 {
	return int64(le32(sb, lo)) | int64(sb[hi])<<32
}

// setJournalFeatures gives the journal the features a read-write mount of
// the kernel sets before it writes the journal superblock: the Writer
// then logs in that format (tag size, checksums). A version 1 journal
// superblock has no feature words and is left alone.
func (w *Writer) setJournalFeatures() {
	j := w.j
	if j.Version() != 2 {
		return
	}
	compat, incompat := j.Features()
	incompat &^= jbd2.IncompatCsumV2 | jbd2.IncompatCsumV3 | jbd2.IncompatAsyncCommit
	if w.v.incompat&incompat64bit != 0 {
		incompat |= jbd2.Incompat64bit
	}
	if w.v.rocompat&rocompatMetadataCsum != 0 && !w.v.opt.NoJournalChecksum {
		incompat |= jbd2.IncompatCsumV3
	}
	j.SetFeatures(compat&^jbd2.CompatChecksum, incompat)
}

// setupSuper is ext4_setup_super for a read-write mount; the caller
// writes the superblock.
func (w *Writer) setupSuper() {
	sb := w.sb
	w.mountState = le16(sb, sbState)
	w.kbStart = le64(sb, sbKbytesWritten)
	now := w.Now().Unix()
	max := int16(le16(sb, sbMaxMntCount))
	switch logf := w.v.opt.Logf; {
	case w.mountState&stateValidFS == 0:
		logf("ext4: warning: mounting unchecked fs, running e2fsck is recommended")
	case w.mountState&stateErrorFS != 0:
		logf("ext4: warning: mounting fs with errors, running e2fsck is recommended")
	case max > 0 && le16(sb, sbMntCount) >= uint16(max):
		logf("ext4: warning: maximal mount count reached, running e2fsck is recommended")
	case le32(sb, sbCheckinterval) != 0 && getTstamp(sb, sbLastcheck, sbLastcheckHi)+int64(le32(sb, sbCheckinterval)) <= now:
		logf("ext4: warning: checktime reached, running e2fsck is recommended")
	}
	if w.j == nil {
		binary.LittleEndian.PutUint16(sb[sbState:], w.mountState&^stateValidFS)
	}
	if max == 0 {
		binary.LittleEndian.PutUint16(sb[sbMaxMntCount:], dflMaxMntCount)
	}
	binary.LittleEndian.PutUint16(sb[sbMntCount:], le16(sb, sbMntCount)+1)
	setTstamp(sb, sbMtime, sbMtimeHi, now)
	if w.j != nil && w.v.compat&compatOrphanFile != 0 {
		setOrphanPresent(sb, true)
	}
	w.mounted = true
}

// putSuper is ext4_put_super's change to s_state; the caller writes the
// superblock.
func (w *Writer) putSuper() {
	if !w.mounted {
		return
	}
	st := w.mountState | le16(w.sb, sbState)&stateErrorFS
	binary.LittleEndian.PutUint16(w.sb[sbState:], st)
	setOrphanPresent(w.sb, false)
}

// updateSuper is what ext4_update_super sets in superblock sb (w.sb, or
// a copy written in place) at every write besides the counts: s_wtime
// and, on a mounted Writer, s_kbytes_written.
func (w *Writer) updateSuper(sb []byte) {
	setTstamp(sb, sbWtime, sbWtimeHi, w.Now().Unix())
	if w.mounted {
		binary.LittleEndian.PutUint64(sb[sbKbytesWritten:], w.kbStart+w.jdev.written.Load()>>10)
	}
}

// setOrphanPresent sets or clears RO_COMPAT_ORPHAN_PRESENT in sb.
func setOrphanPresent(sb []byte, on bool) {
	f := le32(sb, 0x64) &^ rocompatOrphanPresent
	if on {
		f |= rocompatOrphanPresent
	}
	binary.LittleEndian.PutUint32(sb[0x64:], f)
}

// SampleLastMounted is ext4_sample_last_mounted, for the first open of a
// regular file: s_last_mounted gets MountPoint, padded with NULs, unless
// it holds it already or MountPoint is longer than 63 bytes. Errors are the Writer's own:
// the open goes on, as the kernel's does.
func (w *Writer) SampleLastMounted() {
	if w.sampled.Load() || w.MountPoint == "" {
		return
	}
	if w.lock() != nil {
		return
	}
	defer w.unlock()
	if w.sampled.Swap(true) {
		return
	}
	// The kernel takes the path with d_path into a 64-byte buffer, NUL
	// included: a longer one is ENAMETOOLONG, and nothing is recorded.
	if len(w.MountPoint) > 63 {
		return
	}
	var p [64]byte
	copy(p[:], w.MountPoint)
	if bytes.Equal(w.sb[sbLastMounted:sbLastMounted+64], p[:]) {
		return
	}
	copy(w.sb[sbLastMounted:], p[:])
	w.writeSuper()
}
