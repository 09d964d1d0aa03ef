package loop

// The vfs interfaces each type of this package implements, checked by
// the compiler: the VFS finds them by type assertion, so a method whose
// signature drifted would otherwise drop the capability without a word.

import "github.com/iovfs/iovfs/vfs"

var (
	_ vfs.Opener = (*Control)(nil)

	_ vfs.Ioctler = (*ctlHandle)(nil)

	_ vfs.IterReader = (*Device)(nil)
	_ vfs.IterWriter = (*Device)(nil)
	_ vfs.Opener     = (*Device)(nil)

	_ vfs.Ioctler    = (*handle)(nil)
	_ vfs.IterReader = (*handle)(nil)
	_ vfs.IterWriter = (*handle)(nil)
	_ vfs.Reader     = (*handle)(nil)
	_ vfs.Releaser   = (*handle)(nil)
	_ vfs.Seeker     = (*handle)(nil)
	_ vfs.Syncer     = (*handle)(nil)
	_ vfs.Writer     = (*handle)(nil)

	_ vfs.Opener = (*Part)(nil)
)
