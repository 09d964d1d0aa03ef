package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkCpIntoVFAT copies 1,000 files (5 directories of 200, 28 KiB
// on average) into a fresh 256 MiB FAT32 image per iteration: iovfs cp
// against mcopy -s, the yardstick the image tools aim at. hostio is the
// floor under both: the same host files opened, read and written one
// after another into the fresh image, with no file system work, the
// writes on a second goroutine as iovfs cp does them.
func BenchmarkCpIntoVFAT(b *testing.B) {
	for _, tool := range []string{"mkfs.fat", "mcopy"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skip("needs " + tool)
		}
	}
	src := b.TempDir()
	sizes := []int{100, 1000, 4000, 16000, 40000, 100000}
	for d := range 5 {
		dir := filepath.Join(src, fmt.Sprintf("d%03d", d))
		os.Mkdir(dir, 0o755)
		for f := range 200 {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", f)), bytes.Repeat([]byte{byte(f)}, sizes[(d*200+f)%len(sizes)]), 0o644)
		}
	}
	img := filepath.Join(b.TempDir(), "v.img")
	mkfs := func() {
		os.Remove(img)
		if out, err := exec.Command("mkfs.fat", "-C", "-F", "32", img, "262144").CombinedOutput(); err != nil {
			b.Fatalf("mkfs.fat: %v\n%s", err, out)
		}
	}
	b.Run("iovfs", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			mkfs()
			b.StartTimer()
			if st := run([]string{"cp", "-r", src, img + ":/"}, io.Discard, io.Discard); st != 0 {
				b.Fatalf("status %d", st)
			}
		}
	})
	b.Run("hostio", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			mkfs()
			b.StartTimer()
			if err := hostIOFloor(src, img); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mcopy", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			mkfs()
			b.StartTimer()
			if out, err := exec.Command("mcopy", "-s", "-i", img, src, "::").CombinedOutput(); err != nil {
				b.Fatalf("mcopy: %v\n%s", err, out)
			}
		}
	})
}

// hostIOFloor reads every regular file under src in walk order (open,
// fstat, pread, close) into 256 KiB runs and writes the runs one after
// another into img from a second goroutine, 4 MiB in: the host I/O a copy
// of src into img cannot do without.
func hostIOFloor(src, img string) error {
	out, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer out.Close()
	runs := make(chan []byte, 1)
	free := make(chan []byte, 2)
	free <- make([]byte, 256<<10)
	free <- make([]byte, 256<<10)
	werr := make(chan error, 1)
	go func() {
		off := int64(4 << 20)
		var err error
		for r := range runs {
			if err == nil {
				_, err = out.WriteAt(r, off)
			}
			off += int64(len(r))
			free <- r[:cap(r)]
		}
		werr <- err
	}()
	buf, fill := <-free, 0
	walkErr := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		for r := int64(0); r < fi.Size(); {
			n, err := f.ReadAt(buf[fill:min(len(buf), fill+int(fi.Size()-r))], r)
			if err != nil && n == 0 {
				return err
			}
			r += int64(n)
			fill += n
			if fill == len(buf) {
				runs <- buf
				buf, fill = <-free, 0
			}
		}
		return nil
	})
	runs <- buf[:fill]
	close(runs)
	if err := <-werr; err != nil {
		return err
	}
	return walkErr
}
