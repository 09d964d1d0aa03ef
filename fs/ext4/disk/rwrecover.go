package disk

// What a read-only mount writes before it serves a volume: the journal's
// replay, as ext4_load_journal and ext4_mark_recovery_complete do for an
// "ro" mount of a volume with needs_recovery (the log replayed, marked
// empty, needs_recovery cleared, so the mount shows the committed
// state), and the orphan cleanup. The VFS glue takes write access to the
// device for them only.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
)

// OrphansPending reads the superblock of dev and reports whether a
// read-only mount's orphan cleanup has work: orphans on the list, or in
// an orphan file that a read-write mount left marked ORPHAN_PRESENT; and
// whether the volume has errors recorded, for which ext4_orphan_cleanup
// keeps the list on a read-only mount. A device too small for a
// superblock, or without one, has none.
func OrphansPending(dev Device) (pending, withErrors bool, err error) {
	if dev.Size() < sbOffset+sbSize {
		return false, false, nil
	}
	sb := make([]byte, sbSize)
	if err := readFull(dev, sb, sbOffset); err != nil {
		return false, false, err
	}
	inFile := le32(sb, 0x5C)&compatOrphanFile != 0 && le32(sb, 0x64)&rocompatOrphanPresent != 0
	if le16(sb, 0x38) != sbMagic || le32(sb, sbLastOrphan) == 0 && !inFile {
		return false, false, nil
	}
	return true, le16(sb, 0x3A)&stateErrorFS != 0, nil
}

// CleanOrphans is a read-only mount's orphan cleanup of the volume on dev,
// as ext4_orphan_cleanup does it on a read-only mount (SB_RDONLY cleared
// for it): through a Writer that does none of a mount's superblock
// bookkeeping, the journal replayed first unless noload (measured on the
// kernel here: noload does not stop the cleanup, which then runs on the
// volume as it is, without the journal). A volume the Writer cannot write
// is left alone, with a message to logf. The caller flushes dev.
func CleanOrphans(dev WriteDevice, noload bool, logf func(string, ...any)) error {
	w, err := OpenWriter(dev, Options{Logf: logf, NoLoad: noload, unreplayed: noload, readOnlyMount: true})
	var fe *FeatureError
	if errors.As(err, &fe) {
		logf("ext4: orphan cleanup skipped: %v", err)
		return nil
	}
	if err != nil {
		return err
	}
	return w.Close()
}

// NeedsRecovery reports whether dev holds an ext2/3/4 volume with an
// internal journal whose superblock asks for recovery (has_journal and
// needs_recovery). It reads the superblock only.
func NeedsRecovery(dev Device) (bool, error) {
	if dev.Size() < sbOffset+sbSize {
		return false, nil // Open refuses it
	}
	sb := make([]byte, sbSize)
	if err := readFull(dev, sb, sbOffset); err != nil {
		return false, err
	}
	if le16(sb, 0x38) != sbMagic || le32(sb, 0x4C) == 0 {
		return false, nil
	}
	return le32(sb, 0x5C)&compatHasJournal != 0 && le32(sb, 0x60)&incompatRecover != 0, nil
}

// RecoverJournal replays the journal of the volume on dev, as a read-only
// Linux mount does before it serves the volume: the committed transactions
// are written in place, the log is marked empty (s_start 0, s_sequence the
// next transaction), and the superblock loses needs_recovery and gets the
// free block and inode counts the group descriptors add up to
// (ext4_update_super; s_wtime is left alone, as for a read-only mount).
// It returns the number of transactions replayed. A volume that does not
// need recovery is not written. Errors: those of Open; a *FeatureError for
// a journal the replay cannot read (external, async or fast commits); a
// *CorruptError for a damaged log; the device's write errors.
func RecoverJournal(dev WriteDevice, opt Options) (int, error) {
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	opt.Cache, opt.CacheDevice = nil, nil
	need, err := NeedsRecovery(dev)
	if err != nil || !need {
		return 0, err
	}
	v, err := Open(dev, opt)
	if err != nil {
		return 0, err
	}
	sb := make([]byte, sbSize)
	if err := readFull(dev, sb, sbOffset); err != nil {
		return 0, err
	}
	j, err := openJournal(v, &journalDev{dev: dev, uncounted: true}, sb)
	if err != nil {
		return 0, err
	}
	// The replay marks the log empty.
	n, err := j.Recover(v.blocks)
	if err != nil {
		return 0, fmt.Errorf("ext4: journal recovery: %w", journalErr(le32(sb, 0xE0), err))
	}
	// The replay may have rewritten the superblock and the descriptors:
	// read them again.
	if v, err = Open(dev, opt); err != nil {
		return 0, err
	}
	if err := readFull(dev, sb, sbOffset); err != nil {
		return 0, err
	}
	var freeBlocks uint64
	var freeInodes uint32
	per := v.bs / uint64(v.descSize)
	buf := make([]byte, v.bs)
	for g := uint64(0); g < uint64(v.groups); g++ {
		if g%per == 0 {
			if err := v.readBlock(v.descBlock(g/per), buf); err != nil {
				return 0, err
			}
		}
		d := buf[(g%per)*uint64(v.descSize):]
		freeBlocks += uint64(le16(d, gdFreeBlocks))
		freeInodes += uint32(le16(d, gdFreeInodes))
		if v.descSize >= 64 {
			freeBlocks += uint64(le16(d, 0x2C)) << 16
			freeInodes += uint32(le16(d, 0x2E)) << 16
		}
	}
	binary.LittleEndian.PutUint32(sb[0xC:], uint32(freeBlocks))
	if v.incompat&incompat64bit != 0 {
		binary.LittleEndian.PutUint32(sb[0x158:], uint32(freeBlocks>>32))
	}
	binary.LittleEndian.PutUint32(sb[0x10:], freeInodes)
	binary.LittleEndian.PutUint32(sb[0x60:], le32(sb, 0x60)&^incompatRecover)
	if v.rocompat&rocompatMetadataCsum != 0 {
		binary.LittleEndian.PutUint32(sb[0x3FC:], crc32c(^uint32(0), sb[:0x3FC]))
	}
	if err := writeFull(dev, sb, sbOffset); err != nil {
		return 0, err
	}
	if s, ok := dev.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
			return 0, err
		}
	}
	opt.Logf("ext4: recovery complete: %d journal transactions replayed", n)
	return n, nil
}

func writeFull(dev WriteDevice, p []byte, off int64) error {
	n, err := dev.WriteAt(p, off)
	if err == nil && n < len(p) {
		err = syscall.EIO
	}
	return err
}
