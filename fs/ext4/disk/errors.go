package disk

import (
	"fmt"
	"syscall"
)

// CorruptError reports on-disk damage. Errno is syscall.EUCLEAN (Linux's
// EFSCORRUPTED) for structural damage and syscall.EBADMSG (Linux's EFSBADCRC)
// for a metadata_csum mismatch, so errors.Is(err, syscall.EUCLEAN) and
// errors.Is(err, syscall.EBADMSG) classify it the way the kernel would.
type CorruptError struct {
	Errno syscall.Errno
	What  string // the structure and the fault, e.g. "extent block 1234: bad magic"
	Ino   uint32 // inode concerned, 0 for volume-wide structures
}

func (e *CorruptError) Error() string {
	if e.Ino != 0 {
		return fmt.Sprintf("ext4: inode %d: %s (%s)", e.Ino, e.What, errName(e.Errno))
	}
	return fmt.Sprintf("ext4: %s (%s)", e.What, errName(e.Errno))
}

// Unwrap returns the errno, so errors.Is matches it.
func (e *CorruptError) Unwrap() error { return e.Errno }

func errName(e syscall.Errno) string {
	switch e {
	case syscall.EUCLEAN:
		return "EFSCORRUPTED"
	case syscall.EBADMSG:
		return "EFSBADCRC"
	}
	return e.Error()
}

func corrupt(ino uint32, format string, args ...any) error {
	return &CorruptError{Errno: syscall.EUCLEAN, What: fmt.Sprintf(format, args...), Ino: ino}
}

func badCsum(ino uint32, format string, args ...any) error {
	return &CorruptError{Errno: syscall.EBADMSG, What: fmt.Sprintf(format, args...) + ": checksum mismatch", Ino: ino}
}

// FeatureError refuses a volume that uses an incompatible feature this
// reader does not implement; Linux refuses such a mount with EINVAL.
type FeatureError struct {
	Feature string
}

func (e *FeatureError) Error() string {
	return "ext4: unsupported incompatible feature " + e.Feature
}

// Unwrap returns syscall.EINVAL.
func (e *FeatureError) Unwrap() error { return syscall.EINVAL }
