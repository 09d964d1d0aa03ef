package fat_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/fs/vfat/fat"
)

// memDev is a Device in memory.
type memDev struct{ b []byte }

func (d *memDev) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(d.b)) {
		return 0, syscall.EIO
	}
	return copy(p, d.b[off:]), nil
}

func (d *memDev) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(d.b)) {
		return 0, syscall.EIO
	}
	return copy(d.b[off:], p), nil
}

func (d *memDev) Size() int64  { return int64(len(d.b)) }
func (d *memDev) Flush() error { return nil }

// seed is a 128 KiB FAT12 volume made by mkfs.fat and mtools: HI.TXT
// (an 8.3 name without long entries, "hi\n") and Sub/long name file.txt.
func seed(t testing.TB) []byte {
	f, err := os.Open("testdata/seed12.img.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadMtoolsImage(t *testing.T) {
	v, err := fat.Open(&memDev{seed(t)}, fat.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	v.ReadDir(v.Root(), 0, func(e fat.DirEntry) bool { names = append(names, e.Name); return true })
	if len(names) != 2 || names[0] != "HI.TXT" || names[1] != "Sub" {
		t.Fatalf("root: %q", names)
	}
	n, err := v.Lookup(v.Root(), "hi.txt")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 10)
	if k, err := v.ReadAt(n, b, 0); err != nil || string(b[:k]) != "hi\n" {
		t.Fatalf("HI.TXT: %q %v", b[:k], err)
	}
	sub, _ := v.Lookup(v.Root(), "SUB")
	if _, err := v.Lookup(sub, "LONG NAME FILE.TXT"); err != nil {
		t.Errorf("long name without case: %v", err)
	}
	if _, err := v.Lookup(sub, "LONGNA~1.TXT"); err != nil {
		t.Errorf("alias: %v", err)
	}
}

// fatOffset returns where the first FAT of a FAT12 image starts, and
// the data start, from the boot sector.
func geometry(b []byte) (fatStart, fatLen int) {
	bps := int(binary.LittleEndian.Uint16(b[11:]))
	res := int(binary.LittleEndian.Uint16(b[14:]))
	return res * bps, int(binary.LittleEndian.Uint16(b[22:])) * bps
}

func set12(fatb []byte, c int, v uint16) {
	o := c * 3 / 2
	w := binary.LittleEndian.Uint16(fatb[o:])
	if c&1 != 0 {
		w = w&0x000f | v<<4
	} else {
		w = w&0xf000 | v&0xfff
	}
	binary.LittleEndian.PutUint16(fatb[o:], w)
}

func TestDamagedChains(t *testing.T) {
	for _, c := range []struct {
		name string
		v    uint16 // what HI.TXT's first cluster (2) is made to point at
	}{
		{"loop", 2}, // a cluster pointing at itself
		{"out of range", 0xfe0},
		{"free", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := seed(t)
			fs, _ := geometry(b)
			set12(b[fs:], 2, c.v)
			v, err := fat.Open(&memDev{b}, fat.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n, err := v.Lookup(v.Root(), "HI.TXT")
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 10)
			_, err = v.ReadAt(n, buf, 0)
			if c.v == 2 || c.v == 0xfe0 {
				// HI.TXT is one cluster: a chain that goes on is too
				// long for its size only when followed; ours is read
				// whole, so it must be refused.
				if !errors.Is(err, syscall.EIO) {
					t.Errorf("read: %v, want EIO", err)
				}
			}
			if _, err := v.WriteAt(n, []byte("more data"), 5000, time.Now()); err == nil && c.v != 0 {
				t.Errorf("write on a damaged chain succeeded")
			}
			v.Close()
		})
	}
}

func TestShortFAT(t *testing.T) {
	b := seed(t)
	// Claim a volume far larger than the FAT can describe: the clusters
	// past the FAT's end are not used (calc_fat_clusters).
	big := make([]byte, 8<<20)
	copy(big, b)
	binary.LittleEndian.PutUint16(big[19:], 0)
	binary.LittleEndian.PutUint32(big[32:], uint32(len(big)/512))
	v, err := fat.Open(&memDev{big}, fat.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, fatLen := geometry(big)
	if got, max := v.Info().Clusters, uint32(fatLen*8/12-2); got > max {
		t.Errorf("%d clusters with a FAT of %d entries", got, max+2)
	}
	v.Close()
}

// FuzzVolume opens mutated volumes, lists and reads everything, and
// makes a few changes: errors are fine, a panic or a hang is not.
func FuzzVolume(f *testing.F) {
	f.Add(seed(f), uint16(0), byte(0))
	f.Fuzz(func(t *testing.T, img []byte, at uint16, val byte) {
		if len(img) > 1<<20 {
			return
		}
		img = bytes.Clone(img)
		if int(at) < len(img) {
			img[at] = val
		}
		v, err := fat.Open(&memDev{img}, fat.Options{})
		if err != nil {
			return
		}
		defer v.Close()
		var walk func(d *fat.Node, depth int)
		walk = func(d *fat.Node, depth int) {
			if depth > 8 {
				return
			}
			var ents []fat.DirEntry
			v.ReadDir(d, 0, func(e fat.DirEntry) bool { ents = append(ents, e); return len(ents) < 200 })
			for _, e := range ents {
				v.Stat(e.Node)
				if e.IsDir {
					walk(e.Node, depth+1)
					continue
				}
				buf := make([]byte, 4096)
				v.ReadAt(e.Node, buf, 0)
				v.WriteAt(e.Node, []byte("x"), 100, time.Now())
			}
			v.Create(d, "new file.txt", false, time.Now())
			v.Create(d, "NEWDIR", true, time.Now())
			v.Remove(d, "new file.txt", false, time.Now())
		}
		walk(v.Root(), 0)
		v.Info()
	})
}
