package disk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func writeSeed(t *testing.T, target, name string, data []byte) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func trimZeros(b []byte) []byte { return bytes.TrimRight(b, "\x00") }

// smallTree is a tree for seed images: a little of every object kind.
func smallTree(t *testing.T, entries int) string {
	src := t.TempDir()
	w := func(name string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("tiny", []byte("hello\n"))
	w("d/inl", bytes.Repeat([]byte("i"), 100))
	w("d/blk", bytes.Repeat([]byte("0123456789abcdef"), 300))
	os.Symlink("tiny", filepath.Join(src, "fast"))
	os.Symlink(string(bytes.Repeat([]byte("s/"), 60)), filepath.Join(src, "slow"))
	unix.Setxattr(filepath.Join(src, "tiny"), "user.a", []byte("xattr value"), 0)
	for i := 0; i < entries; i++ {
		w(fmt.Sprintf("big/entry-%05d", i), nil)
	}
	return src
}

func readImg(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGenerateFuzzSeeds rewrites testdata/fuzz from mke2fs images.
func TestGenerateFuzzSeeds(t *testing.T) {
	if os.Getenv("IOVFS_EXT4_GENSEEDS") == "" {
		t.Skip("set IOVFS_EXT4_GENSEEDS=1 to regenerate the fuzz seed corpora")
	}
	needMke2fs(t)
	src := smallTree(t, 0)
	images := map[string][]byte{
		"ext4-1k":      readImg(t, mkfs(t, src, "512K", "-t", "ext4", "-b", "1024", "-O", "^has_journal", "-N", "64")),
		"ext4-4k":      readImg(t, mkfs(t, src, "1M", "-t", "ext4", "-b", "4096", "-O", "^has_journal", "-N", "64")),
		"ext2":         readImg(t, mkfs(t, src, "512K", "-t", "ext2", "-b", "1024", "-N", "64")),
		"inline":       readImg(t, mkfs(t, src, "512K", "-t", "ext4", "-b", "1024", "-O", "^has_journal,inline_data", "-N", "64")),
		"32bit-nocsum": readImg(t, mkfs(t, src, "512K", "-t", "ext4", "-b", "1024", "-O", "^has_journal,^metadata_csum,^64bit", "-N", "64")),
	}
	for name, img := range images {
		writeSeed(t, "FuzzImage", name, encodeSparse(img))
		end := 1024 + 8192
		writeSeed(t, "FuzzSuperblock", name, trimZeros(img[1024:end]))
		v, err := Open(BytesDevice(img), Options{})
		if err != nil {
			t.Fatal(name, err)
		}
		for _, p := range []string{"", "tiny", "d/inl", "d/blk", "fast", "slow", "d"} {
			in, err := resolve(v, p)
			if err != nil {
				t.Fatal(name, p, err)
			}
			raw := bytes.Clone(in.raw)
			if len(raw) < 256 {
				raw = append(raw, make([]byte, 256-len(raw))...)
			}
			writeSeed(t, "FuzzInode", fmt.Sprintf("%s-%d", name, in.Ino), raw)
		}
	}

	// Directory blocks: a linear root and an htree directory without
	// metadata_csum (testVolume has none).
	dsrc := smallTree(t, 300)
	img := readImg(t, mkfs(t, dsrc, "1M", "-t", "ext4", "-b", "1024", "-O", "^has_journal,^metadata_csum", "-N", "512"))
	v, err := Open(BytesDevice(img), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", "big"} {
		in, err := resolve(v, p)
		if err != nil {
			t.Fatal(err)
		}
		var blocks []byte
		for l := uint64(0); l < in.Size/1024; l++ {
			m, err := v.MapBlocks(in, nil, l)
			if err != nil {
				t.Fatal(err)
			}
			blocks = append(blocks, img[(m.Physical+l-m.Logical)*1024:][:1024]...)
		}
		sel := byte(0)
		if in.Flags&FlagIndex != 0 {
			sel = 1
		}
		writeSeed(t, "FuzzDirBlock", "dir-"+p, append([]byte{sel}, blocks...))
	}

	// Extent trees: a root with leaf extents (one unwritten), a depth-1
	// tree with its leaf at block 600, and a block map with an indirect
	// block at 600.
	root := func(depth, entries int) []byte {
		b := make([]byte, 60)
		binary.LittleEndian.PutUint16(b[0:], 0xF30A)
		binary.LittleEndian.PutUint16(b[2:], uint16(entries))
		binary.LittleEndian.PutUint16(b[4:], 4)
		binary.LittleEndian.PutUint16(b[6:], uint16(depth))
		return b
	}
	ext := func(b []byte, i int, lblk uint32, n uint16, phys uint32) {
		e := b[12+12*i:]
		binary.LittleEndian.PutUint32(e[0:], lblk)
		binary.LittleEndian.PutUint16(e[4:], n)
		binary.LittleEndian.PutUint32(e[8:], phys)
	}
	r0 := root(0, 3)
	ext(r0, 0, 0, 2, 601)
	ext(r0, 1, 5, 3+32768, 603)
	ext(r0, 2, 100, 1, 610)
	writeSeed(t, "FuzzExtentTree", "leaf-root", append(r0, bytes.Repeat([]byte("data"), 2048)...))
	r1 := root(1, 1)
	binary.LittleEndian.PutUint32(r1[12+4:], 600)
	leaf := make([]byte, 1024)
	copy(leaf, root(0, 4))
	binary.LittleEndian.PutUint16(leaf[4:], 84)
	ext(leaf, 0, 0, 1, 601)
	ext(leaf, 1, 1, 1, 603)
	ext(leaf, 2, 7, 2+32768, 604)
	ext(leaf, 3, 1000, 1, 606)
	writeSeed(t, "FuzzExtentTree", "depth1", append(r1, leaf...))
	bm := make([]byte, 60)
	for i := 0; i < 12; i++ {
		binary.LittleEndian.PutUint32(bm[4*i:], uint32(601+i))
	}
	binary.LittleEndian.PutUint32(bm[48:], 600)
	ind := make([]byte, 1024)
	for i := 0; i < 256; i += 3 {
		binary.LittleEndian.PutUint32(ind[4*i:], uint32(620+i))
	}
	writeSeed(t, "FuzzExtentTree", "blockmap", append(bm, ind...))
}
