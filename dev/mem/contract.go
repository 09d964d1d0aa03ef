package mem

// The vfs interfaces each type of this package implements, checked by
// the compiler: the VFS finds them by type assertion, so a method whose
// signature drifted would otherwise drop the capability without a word.

import "github.com/iovfs/iovfs/vfs"

var (
	_ vfs.IterReader     = (*Full)(nil)
	_ vfs.NoSpliceWriter = (*Full)(nil)
	_ vfs.Opener         = (*Full)(nil)
	_ vfs.Positionless   = (*Full)(nil)
	_ vfs.Writer         = (*Full)(nil)

	_ vfs.Discarder      = (*Null)(nil)
	_ vfs.IterReader     = (*Null)(nil)
	_ vfs.IterWriter     = (*Null)(nil)
	_ vfs.NoSpliceReader = (*Null)(nil)
	_ vfs.NoWaiter       = (*Null)(nil)
	_ vfs.Opener         = (*Null)(nil)
	_ vfs.Positionless   = (*Null)(nil)
	_ vfs.Reader         = (*Null)(nil)
	_ vfs.Writer         = (*Null)(nil)

	_ vfs.IterReader   = (*Random)(nil)
	_ vfs.IterWriter   = (*Random)(nil)
	_ vfs.NoWaiter     = (*Random)(nil)
	_ vfs.Opener       = (*Random)(nil)
	_ vfs.Positionless = (*Random)(nil)

	_ vfs.Discarder    = (*VecZero)(nil)
	_ vfs.IterReader   = (*VecZero)(nil)
	_ vfs.IterWriter   = (*VecZero)(nil)
	_ vfs.NoWaiter     = (*VecZero)(nil)
	_ vfs.Opener       = (*VecZero)(nil)
	_ vfs.Positionless = (*VecZero)(nil)

	_ vfs.Discarder    = (*Zero)(nil)
	_ vfs.IterReader   = (*Zero)(nil)
	_ vfs.IterWriter   = (*Zero)(nil)
	_ vfs.NoWaiter     = (*Zero)(nil)
	_ vfs.Opener       = (*Zero)(nil)
	_ vfs.Positionless = (*Zero)(nil)
	_ vfs.Reader       = (*Zero)(nil)
	_ vfs.Writer       = (*Zero)(nil)
)
