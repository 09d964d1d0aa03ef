package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkImageCp extracts a whole image, 20,000 files of mixed sizes in
// a 1 GiB ext4 image, three ways: iovfs cp -r (ImportFile, loop, ext4
// dax, parallel workers), debugfs -R "rdump / DIR", and cp -a from a
// kernel loop mount (mounted once, outside the timing). The image is made
// once under /tmp and removed at the end. Run it with
//
//	go test ./cmd/iovfs -run '^$' -bench ImageCp -benchtime 3x
//
// All three read the image through the host page cache, warm after the
// first iteration; the copies go to a private tmpfs.
func BenchmarkImageCp(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root for the kernel loop mount")
	}
	for _, tool := range []string{"mke2fs", "debugfs", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skip("no " + tool)
		}
	}
	work, err := os.MkdirTemp("/tmp", "iovfs-bench-cp-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "src")
	img := filepath.Join(work, "img")
	bytesTotal := makeMixedTree(b, src, 20000)
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", src, img, "1G").CombinedOutput(); err != nil {
		b.Fatalf("mke2fs: %v\n%s", err, out)
	}
	os.RemoveAll(src)

	// A kernel mount for the third variant.
	kdir := filepath.Join(work, "kmnt")
	os.Mkdir(kdir, 0o755)
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
	ctl.Close()
	if err != nil {
		b.Fatal(err)
	}
	imgf, _ := os.Open(img)
	lf, err := os.OpenFile(fmt.Sprintf("/dev/loop%d", n), os.O_RDONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	cfg := unix.LoopConfig{Fd: uint32(imgf.Fd())}
	cfg.Info.Flags = unix.LO_FLAGS_READ_ONLY | unix.LO_FLAGS_AUTOCLEAR
	if err := unix.IoctlLoopConfigure(int(lf.Fd()), &cfg); err != nil {
		b.Fatal(err)
	}
	err = unix.Mount(lf.Name(), kdir, "ext4", unix.MS_RDONLY, "")
	lf.Close()
	imgf.Close()
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Unmount(kdir, 0)

	// The copies land on a private tmpfs, so that the host disk's
	// writeback of 700 MB per iteration does not decide the figures.
	outs := filepath.Join(work, "out")
	os.Mkdir(outs, 0o755)
	if err := unix.Mount("tmpfs", outs, "tmpfs", 0, "size=2g"); err != nil {
		b.Fatal(err)
	}
	defer unix.Unmount(outs, unix.MNT_DETACH)

	variants := []struct {
		name string
		run  func(dst string) error
	}{
		{"iovfs", func(dst string) error {
			var o, e bytes.Buffer
			if st := run([]string{"cp", "-r", img + ":/", dst}, &o, &e); st != 0 {
				return fmt.Errorf("status %d: %s", st, e.String())
			}
			return nil
		}},
		{"debugfs", func(dst string) error {
			os.Mkdir(dst, 0o755)
			out, err := exec.Command("debugfs", "-R", "rdump / "+dst, img).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}},
		{"kernel-cp-a", func(dst string) error {
			out, err := exec.Command("cp", "-a", kdir, dst).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(bytesTotal)
			for i := 0; i < b.N; i++ {
				dst := filepath.Join(outs, fmt.Sprintf("%s-%d", v.name, i))
				if err := v.run(dst); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(dst)
				b.StartTimer()
			}
		})
	}
}

// makeMixedTree writes n files under 100 directories: most of 0-32 KiB,
// one in 200 of 2-6 MiB. It returns the bytes written.
func makeMixedTree(b *testing.B, dir string, n int) int64 {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 6<<20)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	var total int64
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i%100))
		os.MkdirAll(d, 0o755)
		size := r.IntN(32 << 10)
		if i%200 == 0 {
			size = 2<<20 + r.IntN(4<<20)
		}
		off := r.IntN(len(buf) - size)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d", i)), buf[off:off+size], 0o644); err != nil {
			b.Fatal(err)
		}
		total += int64(size)
	}
	return total
}

// BenchmarkImageCpIn copies the tree of BenchmarkImageCp, 20,000 files
// of mixed sizes, into an empty 1 GiB ext4 image three ways: iovfs cp -r
// into an image made by mke2fs beforehand (outside the timing), mke2fs -d
// making the image with the tree in it, and a kernel loop mount of an
// empty image with cp -a into it and the unmount (which writes the image
// back). Source and images are on a private tmpfs, so that neither the
// host disk nor its writeback decides the figures. Run it with
//
//	go test ./cmd/iovfs -run '^$' -bench ImageCpIn -benchtime 3x
func BenchmarkImageCpIn(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root for the tmpfs and the kernel loop mount")
	}
	for _, tool := range []string{"mke2fs", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skip("no " + tool)
		}
	}
	work, err := os.MkdirTemp("/tmp", "iovfs-bench-cpin-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(work)
	if err := unix.Mount("tmpfs", work, "tmpfs", 0, "size=3g"); err != nil {
		b.Fatal(err)
	}
	defer unix.Unmount(work, unix.MNT_DETACH)
	src := filepath.Join(work, "src")
	bytesTotal := makeMixedTree(b, src, 20000)
	kdir := filepath.Join(work, "kmnt")
	os.Mkdir(kdir, 0o755)
	mkfs := func(img string, args ...string) error {
		os.Remove(img)
		args = append(append([]string{"-q", "-t", "ext4"}, args...), img, "1G")
		if out, err := exec.Command("mke2fs", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("mke2fs: %v\n%s", err, out)
		}
		return nil
	}
	variants := []struct {
		name  string
		setup func(img string) error // untimed
		run   func(img string) error
	}{
		{"iovfs", func(img string) error { return mkfs(img) }, func(img string) error {
			var o, e bytes.Buffer
			if st := run([]string{"cp", "-r", src + "/.", img + ":/"}, &o, &e); st != 0 {
				return fmt.Errorf("status %d: %s", st, e.String())
			}
			return nil
		}},
		{"mke2fs-d", func(string) error { return nil }, func(img string) error { return mkfs(img, "-d", src) }},
		{"kernel-cp-a", func(img string) error { return mkfs(img) }, func(img string) error {
			out, err := exec.Command("mount", "-o", "loop", img, kdir).CombinedOutput()
			if err != nil {
				return fmt.Errorf("mount: %v: %s", err, out)
			}
			out, err = exec.Command("cp", "-a", src+"/.", kdir).CombinedOutput()
			if uerr := unix.Unmount(kdir, 0); err == nil && uerr != nil {
				return fmt.Errorf("umount: %v", uerr)
			}
			if err != nil {
				return fmt.Errorf("cp -a: %v: %s", err, out)
			}
			return nil
		}},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(bytesTotal)
			img := filepath.Join(work, "img-"+v.name)
			for b.Loop() {
				b.StopTimer()
				if err := v.setup(img); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := v.run(img); err != nil {
					b.Fatal(err)
				}
			}
			os.Remove(img)
		})
	}
}
