package jbd2

import (
	"fmt"
	"syscall"
)

// CorruptError reports a damaged journal: Errno is syscall.EUCLEAN
// (Linux's EFSCORRUPTED) for structural damage and syscall.EBADMSG
// (EFSBADCRC) for a checksum mismatch; errors.Is matches it.
type CorruptError struct {
	Errno syscall.Errno
	What  string
}

func (e *CorruptError) Error() string { return "jbd2: " + e.What }

// Unwrap returns the errno.
func (e *CorruptError) Unwrap() error { return e.Errno }

func corrupt(format string, args ...any) error {
	return &CorruptError{Errno: syscall.EUCLEAN, What: fmt.Sprintf(format, args...)}
}

func badCsum(format string, args ...any) error {
	return &CorruptError{Errno: syscall.EBADMSG, What: fmt.Sprintf(format, args...) + ": checksum mismatch"}
}

// FeatureError refuses a journal with an incompatible feature this
// package does not implement (EINVAL, as Linux refuses the mount).
type FeatureError struct {
	Feature string
}

func (e *FeatureError) Error() string { return "jbd2: unsupported " + e.Feature }

// Unwrap returns syscall.EINVAL.
func (e *FeatureError) Unwrap() error { return syscall.EINVAL }
