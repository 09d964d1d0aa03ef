package devfs_test

import (
	"testing"

	"github.com/iovfs/iovfs/dev/mem"
	"github.com/iovfs/iovfs/fs/devfs"
	"github.com/iovfs/iovfs/vfs"
	"github.com/iovfs/iovfs/vfs/vfstest"
)

// TestVFS runs the VFS conformance suite on devfs, a flat directory of
// device nodes: it claims no namespace change.
func TestVFS(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.FileSystem {
		fs := devfs.New()
		for name, d := range map[string]devfs.Device{"null": mem.Null{}, "zero": mem.Zero{}, "full": mem.Full{}} {
			if err := fs.Add(name, d); err != nil {
				t.Fatal(err)
			}
		}
		return fs
	}, vfstest.Caps{})
}
