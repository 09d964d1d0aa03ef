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
// against mcopy -s, the yardstick the image tools aim at.
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
