package loop_test

import (
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// syncFS is a file system with one 1 MiB regular file, "f", that counts
// the syncs it receives, so a test can see fsync reach the backing file.
type syncFS struct{ f *syncFile }

func (s syncFS) Root() vfs.Node { return syncDir(s) }

type syncDir struct{ f *syncFile }

func (syncDir) Stat() (vfs.Stat, error) { return vfs.Stat{Mode: unix.S_IFDIR | 0o755, Nlink: 2}, nil }
func (d syncDir) Lookup(name string) (vfs.Node, error) {
	if name == "f" {
		return d.f, nil
	}
	return nil, syscall.ENOENT
}

type syncFile struct{ syncs, datasyncs atomic.Int32 }

func (*syncFile) Stat() (vfs.Stat, error) {
	return vfs.Stat{Mode: unix.S_IFREG | 0o644, Nlink: 1, Size: 1 << 20}, nil
}
func (*syncFile) Read(p []byte, off int64) (int, error)  { clear(p); return len(p), nil }
func (*syncFile) Write(p []byte, off int64) (int, error) { return len(p), nil }
func (f *syncFile) Sync() error                          { f.syncs.Add(1); return nil }
func (f *syncFile) Datasync() error                      { f.datasyncs.Add(1); return nil }

// TestFsyncReachesBacking: fsync and fdatasync on a loop device flush its
// backing file (loop.c's REQ_OP_FLUSH is a vfs_fsync of the backing file).
func TestFsyncReachesBacking(t *testing.T) {
	p := newProc(t)
	sf := &syncFile{}
	if err := p.Mkdir("/mnt/s", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Namespace().MountFS("/mnt/s", syncFS{sf}, false); err != nil {
		t.Fatal(err)
	}
	bfd, err := p.Open("/mnt/s/f", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	lfd := attach(t, p, 0, bfd, geom{}, unix.O_RDWR)
	if err := p.Fsync(lfd); err != nil {
		t.Fatal(err)
	}
	if err := p.Fdatasync(lfd); err != nil {
		t.Fatal(err)
	}
	if s, d := sf.syncs.Load(), sf.datasyncs.Load(); s != 2 || d != 0 {
		t.Errorf("backing file got %d syncs and %d datasyncs, want 2 and 0 (a flush is a full fsync)", s, d)
	}
	// The backing file's own descriptor: its Datasync is used.
	if err := p.Fdatasync(bfd); err != nil || sf.datasyncs.Load() != 1 {
		t.Errorf("fdatasync of the backing file: %v, %d datasyncs", err, sf.datasyncs.Load())
	}
	if _, err := p.Ioctl(lfd, unix.LOOP_CLR_FD, 0); err != nil {
		t.Fatal(err)
	}
	p.Close(lfd)
	p.Close(bfd)
}
