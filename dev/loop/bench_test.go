package loop_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

const benchSize = 1 << 20

// hostImage writes a host file of random bytes and returns its path.
func hostImage(t testing.TB) string {
	path := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(path, randBytes(99, benchSize), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// devices sets up the block devices measured: a RAM disk, a loop device
// over a tmpfs file, and one over an imported host file.
func devices(t testing.TB) (p *vfs.Proc, fds map[string]int) {
	p = newProc(t)
	fds = map[string]int{}
	ram, err := p.Open("/dev/ram0", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Pwrite(ram, randBytes(98, benchSize), 0)
	fds["ram"] = ram
	bfd := tmpfsFile(t, p, "/tmp/img", randBytes(97, benchSize), unix.O_RDWR)
	fds["loop-tmpfs"] = attach(t, p, 0, bfd, geom{bs: 4096}, unix.O_RDWR)
	f, err := os.OpenFile(hostImage(t), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	hfd, err := p.ImportFile(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	fds["loop-host"] = attach(t, p, 1, hfd, geom{bs: 4096}, unix.O_RDWR)
	return p, fds
}

// TestAllocs: 4 KiB reads on block devices do not allocate, through
// Pread, one-segment Preadv, and two-segment Preadv (the vectored path).
func TestAllocs(t *testing.T) {
	p, fds := devices(t)
	buf := make([]byte, 4096)
	one := [][]byte{buf}
	two := [][]byte{buf[:1000], buf[1000:]}
	for name, fd := range fds {
		off := int64(0)
		for _, c := range []struct {
			call string
			f    func() (int, error)
		}{
			{"Pread", func() (int, error) { return p.Pread(fd, buf, off) }},
			{"Preadv1", func() (int, error) { return p.Preadv(fd, one, off) }},
			{"Preadv2", func() (int, error) { return p.Preadv(fd, two, off) }},
			// Unaligned: the head and tail go through a pooled sector buffer.
			{"Pread unaligned", func() (int, error) { return p.Pread(fd, buf, off+100) }},
		} {
			allocs := testing.AllocsPerRun(100, func() {
				if n, err := c.f(); n != 4096 || err != nil {
					t.Fatalf("%s %s: %d, %v", name, c.call, n, err)
				}
				off = (off + 4096) % benchSize
			})
			if allocs != 0 {
				t.Errorf("%s %s: %v allocations", name, c.call, allocs)
			}
		}
	}
	// Direct access plus CopyOut, as an ext4 DAX read does it.
	da := blockDevice(t, p, fds["loop-host"]).(block.DirectAccessor)
	allocs := testing.AllocsPerRun(100, func() {
		v, err := da.DirectAccess(8192, 4096)
		it := iov.Buf(buf)
		if n, _ := block.CopyOut(&it, v); err != nil || n != 4096 {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("direct access: %v allocations", allocs)
	}
}

// TestDirectAccessHost checks the mmap view of a loop device over an
// imported host file, and that a view made stale by the host file
// shrinking gives EIO through CopyOut rather than a crash (SIGBUS).
func TestDirectAccessHost(t *testing.T) {
	p := newProc(t)
	path := hostImage(t)
	want, _ := os.ReadFile(path)
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	hfd, _ := p.ImportFile(f)
	f.Close()
	fd := attach(t, p, 0, hfd, geom{offset: 1000}, unix.O_RDWR)
	da := blockDevice(t, p, fd).(block.DirectAccessor)
	v, err := da.DirectAccess(0, 1<<19)
	if err != nil || string(v) != string(want[1000:1000+1<<19]) {
		t.Fatalf("view: %v", err)
	}
	p.Pwrite(fd, []byte("hello"), 600000)
	v, _ = da.DirectAccess(600000, 5)
	if string(v) != "hello" {
		t.Fatalf("write not visible in view: %q", v)
	}
	// Another process truncates the file under the mapping.
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	v, _ = da.DirectAccess(900000, 4096)
	buf := make([]byte, 4096)
	it := iov.Buf(buf)
	if _, err := block.CopyOut(&it, v); err != syscall.EIO {
		t.Fatalf("CopyOut of a truncated mapping: %v, want EIO", err)
	}
	if n, err := block.Copy(buf, v); n != 0 || err != syscall.EIO {
		t.Fatalf("Copy of a truncated mapping: %d, %v; want 0, EIO", n, err)
	}
	// The block path reads the backing file: nothing there now, so EIO.
	if _, err := p.Pread(fd, buf, 900000); err != syscall.EIO {
		t.Fatalf("pread beyond the shrunk backing file: %v", err)
	}
}

func BenchmarkBlockPread(b *testing.B) {
	p, fds := devices(b)
	buf := make([]byte, 4096)
	for _, name := range []string{"ram", "loop-tmpfs", "loop-host"} {
		fd := fds[name]
		b.Run(name+"/4KiB", func(b *testing.B) {
			b.SetBytes(4096)
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				if n, err := p.Pread(fd, buf, off); n != 4096 || err != nil {
					b.Fatal(n, err)
				}
				off = (off + 4096) % benchSize
			}
		})
	}
	da := blockDevice(b, p, fds["loop-host"]).(block.DirectAccessor)
	for _, c := range []struct {
		name string
		safe bool
	}{{"loop-host-dax", true}, {"loop-host-dax-nofault", false}} {
		b.Run(c.name+"/4KiB", func(b *testing.B) {
			b.SetBytes(4096)
			b.ReportAllocs()
			off := int64(0)
			for b.Loop() {
				v, err := da.DirectAccess(off, 4096)
				if err != nil {
					b.Fatal(err)
				}
				it := iov.Buf(buf)
				if c.safe {
					block.CopyOut(&it, v)
				} else {
					it.CopyOut(v)
				}
				off = (off + 4096) % benchSize
			}
		})
	}
	b.Run("kernel-loop/4KiB", func(b *testing.B) {
		if os.Geteuid() != 0 {
			b.Skip("needs root for a host loop device")
		}
		hfd := hostAttach(b, hostImage(b), unix.O_RDWR, unix.O_RDONLY, geom{bs: 4096})
		b.SetBytes(4096)
		b.ReportAllocs()
		off := int64(0)
		for b.Loop() {
			if n, err := unix.Pread(hfd, buf, off); n != 4096 || err != nil {
				b.Fatal(n, err)
			}
			off = (off + 4096) % benchSize
		}
	})
	b.Run("host-file/4KiB", func(b *testing.B) {
		f, _ := os.Open(hostImage(b))
		defer f.Close()
		b.SetBytes(4096)
		b.ReportAllocs()
		off := int64(0)
		for b.Loop() {
			if n, err := unix.Pread(int(f.Fd()), buf, off); n != 4096 || err != nil {
				b.Fatal(n, err)
			}
			off = (off + 4096) % benchSize
		}
	})
}
