package disk

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
)

// fragImage builds a 1 KiB-block metadata_csum image holding /frag, whose
// extent tree is two levels deep (debugfs writes it into the holes left by
// deleting every other small file), and /sparse, a sparse file with an
// unwritten extent from debugfs fallocate. It returns the image bytes and
// the contents /frag and /sparse must have.
func fragImage(t testing.TB) (img, frag, sparse []byte) {
	t.Helper()
	testenv.RequireTool(t, "debugfs")
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	r := rand.New(rand.NewSource(2))
	if err := os.MkdirAll(filepath.Join(src, "pad"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		if err := os.WriteFile(filepath.Join(src, "pad", fmt.Sprint("p", i)), randBytes(r, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sparse = make([]byte, 1<<20)
	copy(sparse, randBytes(r, 3000))
	if err := os.WriteFile(filepath.Join(src, "sparse"), sparse[:3000], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(src, "sparse"), 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "victim"), []byte("victim data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "bystander"), bytes.Repeat([]byte("ok"), 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	frag = randBytes(r, 900000)
	fragPath := filepath.Join(dir, "frag.bin")
	if err := os.WriteFile(fragPath, frag, 0o644); err != nil {
		t.Fatal(err)
	}
	path := mkfs(t, src, "32M", "-t", "ext4", "-b", "1024", "-N", "4096", "-O", "metadata_csum")
	var cmds bytes.Buffer
	for i := 1; i < 2000; i += 2 {
		fmt.Fprintf(&cmds, "rm /pad/p%d\n", i)
	}
	fmt.Fprintf(&cmds, "write %s /frag\nfallocate /sparse 100 400\n", fragPath)
	cmd := exec.Command("debugfs", "-w", "-f", "-", path)
	cmd.Stdin = &cmds
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v\n%s", err, out)
	}
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return img, frag, sparse
}

func TestDeepExtentsAndUnwritten(t *testing.T) {
	img, frag, sparse := fragImage(t)
	v, err := Open(BytesDevice(img), Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := resolve(v, "frag")
	if err != nil {
		t.Fatal(err)
	}
	if d := le16(in.iblock(), 6); d < 2 {
		t.Errorf("frag extent depth %d, want >= 2 (test set-up)", d)
	}
	if got := readAll(t, v, in); !bytes.Equal(got, frag) {
		t.Errorf("frag content differs")
	}
	sp, err := resolve(v, "sparse")
	if err != nil {
		t.Fatal(err)
	}
	m, err := v.MapBlocks(sp, nil, 150)
	if err != nil || !m.Unwritten || m.Logical != 100 || m.Len != 301 {
		t.Errorf("MapBlocks(sparse, 150) = %+v, %v; want the unwritten extent 100+301", m, err)
	}
	m, err = v.MapBlocks(sp, nil, 50)
	if err != nil || !m.Hole || m.Logical != 50 || m.Len != 50 {
		t.Errorf("MapBlocks(sparse, 50) = %+v, %v; want the hole 50+50", m, err)
	}
	if got := readAll(t, v, sp); !bytes.Equal(got, sparse) {
		t.Errorf("sparse content differs")
	}
}

// locations finds the on-disk bytes to damage.
type locations struct {
	victimInode int64 // byte offset of /victim's inode
	extentBlock int64 // byte offset of a leaf extent block of /frag
	rootDirBlk  int64 // byte offset of the root directory's block 0
}

func locate(t *testing.T, v *Volume) locations {
	var l locations
	victim, err := resolve(v, "victim")
	if err != nil {
		t.Fatal(err)
	}
	g := (victim.Ino - 1) / v.ipg
	l.victimInode = int64(v.itable[g]<<v.bsBits) + int64((victim.Ino-1)%v.ipg)*int64(v.inodeSize)
	frag, err := resolve(v, "frag")
	if err != nil {
		t.Fatal(err)
	}
	root := frag.iblock()
	l.extentBlock = int64(uint64(le32(root, 16))|uint64(le16(root, 20))<<32) << v.bsBits
	rootIn, _ := v.Inode(v.Root())
	m, err := v.MapBlocks(rootIn, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.rootDirBlk = int64(m.Physical << v.bsBits)
	return l
}

func TestCorruption(t *testing.T) {
	img, _, _ := fragImage(t)
	v, err := Open(BytesDevice(img), Options{})
	if err != nil {
		t.Fatal(err)
	}
	loc := locate(t, v)

	// still reads the objects outside the damage.
	still := func(t *testing.T, v *Volume, skip string) {
		t.Helper()
		for _, p := range []string{"bystander", "pad/p0", "sparse", "frag", "victim"} {
			if p == skip {
				continue
			}
			in, err := resolve(v, p)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if _, err := v.ReadAt(in, nil, make([]byte, 4096), 0); err != nil {
				t.Errorf("%s: read: %v", p, err)
			}
		}
	}
	damage := func(off int64, delta byte) []byte {
		b := bytes.Clone(img)
		b[off] ^= delta
		return b
	}

	t.Run("inode", func(t *testing.T) {
		b := damage(loc.victimInode+0x10, 0x40) // i_mtime
		v, err := Open(BytesDevice(b), Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = resolve(v, "victim")
		var ce *CorruptError
		if !errors.Is(err, syscall.EBADMSG) || !errors.As(err, &ce) || ce.Ino == 0 {
			t.Fatalf("victim: %v, want EBADMSG naming the inode", err)
		}
		t.Log(err)
		still(t, v, "victim")
		// Without checksums the inode parses (the damage is a timestamp).
		v2, _ := Open(BytesDevice(b), Options{NoChecksums: true})
		if _, err := resolve(v2, "victim"); err != nil {
			t.Errorf("NoChecksums: %v", err)
		}
	})
	t.Run("inode-structure", func(t *testing.T) {
		b := damage(loc.victimInode+0x80, 0x01) // i_extra_isize odd
		v, _ := Open(BytesDevice(b), Options{NoChecksums: true})
		if _, err := resolve(v, "victim"); !errors.Is(err, syscall.EUCLEAN) {
			t.Fatalf("victim: %v, want EUCLEAN", err)
		}
		still(t, v, "victim")
	})
	t.Run("extent-block", func(t *testing.T) {
		b := damage(loc.extentBlock+12+4, 0x01) // first entry's data
		v, _ := Open(BytesDevice(b), Options{})
		in, err := resolve(v, "frag")
		if err != nil {
			t.Fatal(err)
		}
		_, err = v.ReadAt(in, nil, make([]byte, 1024), 0)
		var ce *CorruptError
		if !errors.Is(err, syscall.EBADMSG) || !errors.As(err, &ce) || ce.Ino != in.Ino {
			t.Fatalf("frag read: %v, want EBADMSG naming inode %d", err, in.Ino)
		}
		t.Log(err)
		still(t, v, "frag")
		// Without checksums, a broken magic is structural damage.
		b = damage(loc.extentBlock, 0xFF)
		v, _ = Open(BytesDevice(b), Options{NoChecksums: true})
		in, _ = resolve(v, "frag")
		if _, err := v.ReadAt(in, nil, make([]byte, 1024), 0); !errors.Is(err, syscall.EUCLEAN) {
			t.Fatalf("frag read, bad magic: %v, want EUCLEAN", err)
		}
	})
	t.Run("dir-block", func(t *testing.T) {
		b := damage(loc.rootDirBlk+12+8, 0x20) // name bytes of ".."'s neighbour region
		v, _ := Open(BytesDevice(b), Options{})
		root, _ := v.Inode(v.Root())
		err := v.ReadDir(root, func([]byte, uint32, uint8) bool { return true })
		if !errors.Is(err, syscall.EBADMSG) {
			t.Fatalf("ReadDir: %v, want EBADMSG", err)
		}
		if _, err := v.Lookup(root, "victim"); !errors.Is(err, syscall.EBADMSG) {
			t.Fatalf("Lookup: %v, want EBADMSG", err)
		}
		t.Log(err)
		// Structural: rec_len of "." made 5. The root, one block on a
		// dir_index volume, is listed by hash: as the kernel's
		// htree_dirblock_to_tree, the listing ignores the block from the
		// bad entry on (nothing listed, no error); a lookup gives EUCLEAN.
		b = damage(loc.rootDirBlk+4, 12^5)
		v, _ = Open(BytesDevice(b), Options{NoChecksums: true})
		root, _ = v.Inode(v.Root())
		n := 0
		if err := v.ReadDir(root, func([]byte, uint32, uint8) bool { n++; return true }); err != nil || n != 0 {
			t.Fatalf("ReadDir: %d entries, %v; want none, no error", n, err)
		}
		if _, err := v.Lookup(root, "victim"); !errors.Is(err, syscall.EUCLEAN) {
			t.Fatalf("Lookup: %v, want EUCLEAN", err)
		}
	})
	t.Run("superblock", func(t *testing.T) {
		b := damage(1024+0x78, 0x01) // volume label
		if _, err := Open(BytesDevice(b), Options{}); !errors.Is(err, syscall.EBADMSG) {
			t.Fatalf("Open: %v, want EBADMSG", err)
		}
		if _, err := Open(BytesDevice(b), Options{NoChecksums: true}); err != nil {
			t.Fatalf("Open NoChecksums: %v", err)
		}
	})
}

// TestGroupDescChecksum: a damaged group descriptor only warns, as on a
// read-only Linux mount, for both metadata_csum (crc32c) and uninit_bg
// (gdt_csum, crc16).
func TestGroupDescChecksum(t *testing.T) {
	for _, feat := range []string{"metadata_csum", "^metadata_csum,uninit_bg"} {
		t.Run(feat, func(t *testing.T) {
			img := readImg(t, mkfs(t, "", "8M", "-t", "ext4", "-b", "1024", "-O", feat))
			var warns []string
			logf := func(f string, a ...any) { warns = append(warns, fmt.Sprintf(f, a...)) }
			if _, err := Open(BytesDevice(img), Options{Logf: logf}); err != nil || len(warns) != 0 {
				t.Fatalf("clean image: %v, warnings %q", err, warns)
			}
			img[2048+0xC] ^= 1 // group 0's free blocks count (descriptors at block 2)
			v, err := Open(BytesDevice(img), Options{Logf: logf})
			if err != nil || len(warns) != 1 {
				t.Fatalf("damaged descriptor: %v, warnings %q; want a mount and one warning", err, warns)
			}
			if _, err := v.Inode(v.Root()); err != nil {
				t.Error(err)
			}
		})
	}
}
