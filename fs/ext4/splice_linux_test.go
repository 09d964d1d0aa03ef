package ext4_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/vfs"
)

// TestSpliceDaxFault: bytes spliced from a file on a dax mount are
// references to the loop device's mapping of an imported host file; when
// another process truncates that file while a pipe holds them, reading
// the pipe, or splicing it into a file, gives EIO instead of crashing
// the program, and a splice into /dev/null, which reads nothing, still
// drops them.
func TestSpliceDaxFault(t *testing.T) {
	img := mkImage(t, 8192, func(t testing.TB, d string) { populate(t, d) }, "-t", "ext4", "-b", "4096")
	orig, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	p := mountImage(t, img, viaLoop, "dax")
	ffd, err := p.Open("/mnt/big", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ffd)
	r, w, err := p.Pipe2(0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(r)
	defer p.Close(w)
	null, err := p.Open("/dev/null", unix.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(null)
	out, err := p.Open("/tmp/out", unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(out)
	for _, sink := range []string{"read", "splice into a tmpfs file"} {
		off := int64(0)
		if n, err := p.Splice(ffd, &off, w, nil, 3*4096, 0); n != 3*4096 || err != nil {
			t.Fatalf("splice before the truncation: %d, %v", n, err)
		}
		// Another process shrinks the image under the mapping.
		if err := os.Truncate(img, 4096); err != nil {
			t.Fatal(err)
		}
		var n int64
		if sink == "read" {
			k, e := p.Read(r, make([]byte, 100))
			n, err = int64(k), e
		} else {
			n, err = p.Splice(r, nil, out, nil, 3*4096, 0)
		}
		if n != 0 || !errors.Is(err, syscall.EIO) {
			t.Errorf("%s of a pipe holding a truncated dax file's memory: %d, %v; want 0, EIO", sink, n, err)
		}
		if n, err := p.Splice(r, nil, null, nil, 3*4096, 0); n != 3*4096 || err != nil {
			t.Errorf("after %s: splice into /dev/null: %d, %v; want all", sink, n, err)
		}
		if err := os.WriteFile(img, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSpliceIntoExt4: a splice from a pipe into a file on a read-write
// ext4 mount (through the loop device and the buffer cache, or dax) is
// one vectored write of the pipe's buffers; sendfile and copy_file_range
// within the mount copy through the private pipe. The bytes read back
// are the ones written, at the offsets given.
func TestSpliceIntoExt4(t *testing.T) {
	needMke2fs(t)
	for _, mode := range []string{"", "dax"} {
		t.Run("opts="+mode, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "rw.img")
			if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", img, "16M").CombinedOutput(); err != nil {
				t.Fatalf("mke2fs: %v\n%s", err, out)
			}
			p, err := iovfs.New()
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(img, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			fd, err := p.ImportFile(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			lfd, err := p.Open("/dev/loop0", unix.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			cfg := unix.LoopConfig{Fd: uint32(fd)}
			cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
			if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
				t.Fatalf("LOOP_CONFIGURE: %v", err)
			}
			p.Close(fd)
			fsys, err := ext4.Mount(vfs.MountRequest{Proc: p, Source: "/dev/loop0", Data: mode})
			p.Close(lfd)
			if err != nil {
				t.Fatalf("mount %q: %v", mode, err)
			}
			if err := p.Namespace().MountFS("/mnt", fsys, false); err != nil {
				t.Fatal(err)
			}
			defer fsys.(vfs.Shutdowner).Shutdown()
			out, err := p.Open("/mnt/f", unix.O_CREAT|unix.O_RDWR, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(out)
			r, w, err := p.Pipe2(0)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(r)
			defer p.Close(w)
			data := make([]byte, 200000)
			for i := range data {
				data[i] = byte(i*31/7 + i>>10)
			}
			want := make([]byte, 5000+len(data))
			copy(want[5000:], data)
			woff := int64(5000)
			for done := 0; done < len(data); {
				n, err := p.Write(w, data[done:min(done+30000, len(data))])
				if err != nil {
					t.Fatal(err)
				}
				if m, err := p.Splice(r, nil, out, &woff, n, 0); m != int64(n) || err != nil {
					t.Fatalf("splice into ext4 at %d: %d of %d, %v", woff, m, n, err)
				}
				done += n
			}
			if woff != int64(len(want)) {
				t.Errorf("offset after the splices: %d, want %d", woff, len(want))
			}
			got := make([]byte, len(want)+10)
			if n, _ := p.Pread(out, got, 0); !bytes.Equal(got[:n], want) {
				t.Errorf("file after the splices: %d bytes, want %d (equal: %v)", n, len(want), bytes.Equal(got[:min(n, len(want))], want[:min(n, len(want))]))
			}
			// Within the mount: sendfile and copy_file_range.
			cp, err := p.Open("/mnt/g", unix.O_CREAT|unix.O_RDWR, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(cp)
			var roff int64 = 100
			if n, err := p.Sendfile(cp, out, &roff, 150000); n != 150000 || err != nil || roff != 150100 {
				t.Fatalf("sendfile: %d, %v, offset %d", n, err, roff)
			}
			roff, woff = 150100, 150000
			if n, err := p.CopyFileRange(out, &roff, cp, &woff, 1<<20, 0); n != len(want)-150100 || err != nil {
				t.Fatalf("copy_file_range: %d, %v", n, err)
			}
			n, _ := p.Pread(cp, got, 0)
			if !bytes.Equal(got[:n], want[100:]) {
				t.Errorf("copy: %d bytes, want %d", n, len(want)-100)
			}
		})
	}
}
