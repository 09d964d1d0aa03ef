package overlay_test

// Benchmarks of the overlay against the layer that serves it, in
// interleaved rounds (internal/paired), as ratios: a cached lstat of a
// 6-component path, a 4 KiB pread of a lower file, and the copy-up of a
// 1 MiB file against a plain 1 MiB copy.
//
//	go test -run XXX -bench Overlay ./fs/overlay

import (
	"fmt"
	"testing"

	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/internal/paired"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// benchOverlay is a namespace with the lower layer a tmpfs of its own at
// /l, the upper and work directories /rw/u and /rw/w on another tmpfs,
// and the overlay at /m: a path through the overlay and the same path on
// the lower layer alone each cross one mount.
func benchOverlay(b *testing.B, setup func(p *vfs.Proc)) *vfs.Proc {
	b.Helper()
	ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))
	p := vfs.NewProc(ns)
	for _, d := range []string{"/l", "/rw", "/m"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
		if d != "/m" {
			if err := ns.MountFS(d, tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}), false); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, d := range []string{"/rw/u", "/rw/w"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	setup(p)
	fs, err := overlay.New(p, overlay.Options{Lower: []string{"/l"}, Upper: "/rw/u", Work: "/rw/w"})
	if err != nil {
		b.Fatal(err)
	}
	if err := ns.MountFS("/m", fs, false); err != nil {
		b.Fatal(err)
	}
	return p
}

func writeFile(b *testing.B, p *vfs.Proc, path string, data []byte) {
	b.Helper()
	fd, err := p.Open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := p.Write(fd, data); err != nil {
		b.Fatal(err)
	}
	p.Close(fd)
}

func BenchmarkOverlay(b *testing.B) {
	b.Run("lstat6", func(b *testing.B) {
		p := benchOverlay(b, func(p *vfs.Proc) {
			dir := "/l"
			for _, c := range []string{"a", "b", "c", "d"} {
				dir += "/" + c
				if err := p.Mkdir(dir, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			writeFile(b, p, dir+"/f", []byte("x"))
		})
		lstat := func(path string) func(b *testing.B) func() error {
			return func(b *testing.B) func() error {
				return func() error { _, err := p.Lstat(path); return err }
			}
		}
		paired.Run(b, 20000,
			paired.Variant{Name: "lower", Open: lstat("/l/a/b/c/d/f")},
			paired.Variant{Name: "overlay", Open: lstat("/m/a/b/c/d/f")})
	})
	b.Run("pread4k", func(b *testing.B) {
		p := benchOverlay(b, func(p *vfs.Proc) { writeFile(b, p, "/l/f", make([]byte, 1<<20)) })
		pread := func(path string) func(b *testing.B) func() error {
			return func(b *testing.B) func() error {
				fd, err := p.Open(path, unix.O_RDONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				buf := make([]byte, 4096)
				off := int64(0)
				return func() error {
					_, err := p.Pread(fd, buf, off)
					off = (off + 4096) % (1 << 20)
					return err
				}
			}
		}
		paired.Run(b, 20000,
			paired.Variant{Name: "lower", Open: pread("/l/f")},
			paired.Variant{Name: "overlay", Open: pread("/m/f")})
	})
	b.Run("copyup1M", func(b *testing.B) {
		const names = 1 << 14
		p := benchOverlay(b, func(p *vfs.Proc) {
			writeFile(b, p, "/l/src", make([]byte, 1<<20))
			for i := range names {
				if err := p.Link("/l/src", fmt.Sprintf("/l/f%d", i)); err != nil {
					b.Fatal(err)
				}
			}
		})
		next := 0
		// The copy-up of a lower file (an open for writing) and the unlink
		// that leaves a whiteout for it.
		copyUp := func(b *testing.B) func() error {
			return func() error {
				if next == names {
					b.Fatal("out of lower files: use a shorter -benchtime")
				}
				path := fmt.Sprintf("/m/f%d", next)
				next++
				fd, err := p.Open(path, unix.O_WRONLY, 0)
				if err != nil {
					return err
				}
				p.Close(fd)
				return p.Unlink(path)
			}
		}
		// A plain copy of the same file from the lower layer's tmpfs to the
		// upper one's, as cp makes it (sendfile: copy_file_range gives
		// EXDEV between two tmpfs), and the unlink of the copy.
		plain := func(b *testing.B) func() error {
			return func() error {
				in, err := p.Open("/l/src", unix.O_RDONLY, 0)
				if err != nil {
					return err
				}
				defer p.Close(in)
				out, err := p.Open("/rw/plain", unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, 0o644)
				if err != nil {
					return err
				}
				for done := 0; done < 1<<20; {
					n, err := p.Sendfile(out, in, nil, 1<<20-done)
					if err != nil {
						p.Close(out)
						return err
					}
					done += n
				}
				p.Close(out)
				return p.Unlink("/rw/plain")
			}
		}
		paired.Run(b, 16,
			paired.Variant{Name: "copy", Open: plain},
			paired.Variant{Name: "copyup", Open: copyUp})
	})
}
