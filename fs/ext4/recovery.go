package ext4

// Journal recovery for read-only mounts (disk.RecoverJournal), as
// ext4_load_journal and ext4_mark_recovery_complete do for an "ro" mount
// of a volume with
// needs_recovery: the log is replayed into the device (write access is
// taken for the replay only), marked empty, and needs_recovery is cleared,
// so the read-only mount shows the committed state. A device that refuses
// writes gives EROFS ("write access unavailable, cannot proceed"); noload
// and norecovery skip all of it and mount the checkpointed state.

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/ext4/disk"
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
	need, err := disk.NeedsRecovery(backingDevice{b: b, size: block.ReadEnd(dev)})
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
	if _, err := disk.RecoverJournal(wdev, disk.Options{Logf: logf}); err != nil {
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
	pending, withErrors, err := disk.OrphansPending(backingDevice{b: b, size: block.ReadEnd(dev)})
	if err != nil || !pending {
		return err
	}
	if dev.ReadOnly() {
		logf("write access unavailable, skipping orphan cleanup")
		return nil
	}
	if withErrors {
		return nil // ext4_orphan_cleanup: "don't clear list on RO mount w/ errors"
	}
	logf("orphan cleanup on readonly fs")
	wb, wdev, err := writableSource(req, block.ReadEnd(dev))
	if err != nil {
		return err
	}
	defer wb.Release()
	if err := disk.CleanOrphans(wdev, noload, logf); err != nil {
		return err
	}
	if err := wb.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
