package ext4

// Journal recovery for read-only mounts, as ext4_load_journal and
// ext4_mark_recovery_complete do for an "ro" mount of a volume with
// needs_recovery: the log is replayed into the device (write access is
// taken for the replay only), marked empty, and needs_recovery is cleared,
// so the read-only mount shows the committed state. A device that refuses
// writes gives EROFS ("write access unavailable, cannot proceed"); noload
// and norecovery skip all of it and mount the checkpointed state.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/vfs"
)

// recoverReadOnly replays the journal of the volume on b, the read-only
// source of an "ro" mount, when it needs recovery: req.Source is opened
// O_RDWR for the replay only. A read-only device gives EROFS.
func recoverReadOnly(req vfs.MountRequest, b *vfs.Backing, logf func(string, ...any)) error {
	dev, ok := block.Of(b.Handle())
	if !ok {
		return nil // newFS refuses it (ENOTBLK)
	}
	need, err := NeedsRecovery(backingDevice{b: b, size: block.ReadEnd(dev)})
	if err != nil || !need {
		return err
	}
	logf("INFO: recovery required on readonly filesystem")
	if dev.ReadOnly() {
		logf("write access unavailable, cannot proceed")
		return fmt.Errorf("ext4: journal recovery on a read-only device: %w", syscall.EROFS)
	}
	logf("write access will be enabled during recovery")
	wb, wdev, err := writableSource(req, block.ReadEnd(dev))
	if err != nil {
		return err
	}
	defer wb.Release()
	if _, err := RecoverJournal(wdev, Options{Logf: logf}); err != nil {
		return err
	}
	if err := wb.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// writableSource opens req.Source O_RDWR, for the one change a read-only
// mount makes to its device (the journal's replay, the orphan cleanup),
// and returns its backing, which the caller releases, and the device of
// size bytes over it.
func writableSource(req vfs.MountRequest, size int64) (*vfs.Backing, backingWDevice, error) {
	fd, err := req.Proc.Open(req.Source, unix.O_RDWR, 0)
	if err != nil {
		return nil, backingWDevice{}, err
	}
	wb, err := req.Proc.Backing(fd)
	req.Proc.Close(fd)
	if err != nil {
		return nil, backingWDevice{}, err
	}
	return wb, backingWDevice{backingDevice{b: wb, size: size}}, nil
}

// orphansReadOnly processes the orphan list of the volume on b, the
// read-only source of an "ro" mount, as ext4_orphan_cleanup does on a
// read-only mount (it clears SB_RDONLY for the cleanup): unless the list
// is empty, the device is read-only ("write access unavailable, skipping
// orphan cleanup"), or the volume has errors (the list is kept). noload
// does not stop it (measured on the kernel here: the cleanup then runs
// without the journal). req.Source is opened O_RDWR for the cleanup only,
// through a Writer (the journal replayed first unless noload). A volume
// the Writer cannot write is left alone, with a message.
func orphansReadOnly(req vfs.MountRequest, b *vfs.Backing, noload bool, logf func(string, ...any)) error {
	dev, ok := block.Of(b.Handle())
	if !ok {
		return nil // newFS refuses it (ENOTBLK)
	}
	bd := backingDevice{b: b, size: block.ReadEnd(dev)}
	if bd.Size() < sbOffset+sbSize {
		return nil
	}
	sb := make([]byte, sbSize)
	if err := readFull(bd, sb, sbOffset); err != nil {
		return err
	}
	// Orphans on the list, or in an orphan file a read-write mount left
	// marked ORPHAN_PRESENT.
	inFile := le32(sb, 0x5C)&compatOrphanFile != 0 && le32(sb, 0x64)&rocompatOrphanPresent != 0
	if le16(sb, 0x38) != sbMagic || le32(sb, sbLastOrphan) == 0 && !inFile {
		return nil
	}
	if dev.ReadOnly() {
		logf("write access unavailable, skipping orphan cleanup")
		return nil
	}
	if le16(sb, 0x3A)&stateErrorFS != 0 {
		return nil // ext4_orphan_cleanup: "don't clear list on RO mount w/ errors"
	}
	logf("orphan cleanup on readonly fs")
	wb, wdev, err := writableSource(req, block.ReadEnd(dev))
	if err != nil {
		return err
	}
	defer wb.Release()
	w, err := OpenWriter(wdev, Options{Logf: logf, NoLoad: noload, unreplayed: noload, readOnlyMount: true})
	var fe *FeatureError
	if errors.As(err, &fe) {
		logf("ext4: orphan cleanup skipped: %v", err)
		return nil
	}
	if err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := wb.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
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
