package ext4_test

// The orphan list on read-only mounts against the kernel's: Linux's
// ext4_orphan_cleanup runs on an "ro" mount (SB_RDONLY cleared for it),
// with or without noload, unless the block device is read-only. Images
// with orphans (an interrupted truncate made with debugfs, files held
// open and unlinked in a live kernel mount copied after syncfs, the same
// left by a Writer that was never closed) are mounted "ro" and
// "ro,noload" on a writable device by the kernel and by iovfs: the same
// tree, the same blocks outside the journal and the superblock, the same
// orphan list (empty) and both e2fsck-clean; on a read-only device
// neither writes.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/internal/testenv"
)

// orphanImages makes the test's images with orphans on disk.
// orphanFileBlocks lists the blocks of img's orphan file (none without
// one).
func orphanFileBlocks(t *testing.T, img []byte) map[int]bool {
	t.Helper()
	out := map[int]bool{}
	ino := binary.LittleEndian.Uint32(img[1024+0x280:])
	if binary.LittleEndian.Uint32(img[1024+0x5C:])&0x1000 == 0 || ino == 0 {
		return out
	}
	v, err := disk.Open(memDev(img), disk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	in, err := v.Inode(ino)
	if err != nil {
		t.Fatal(err)
	}
	var c disk.ExtentCache
	for l := uint64(0); l < in.Size/uint64(v.BlockSize()); {
		m, err := v.MapBlocks(in, &c, l)
		if err != nil {
			t.Fatal(err)
		}
		for k := l - m.Logical; k < m.Len; k++ {
			out[int(m.Physical+k)] = true
		}
		l = m.Logical + m.Len
	}
	return out
}

func orphanImages(t *testing.T) map[string][]byte {
	out := map[string][]byte{}

	// An interrupted truncate: blocks past i_size, the inode on the list.
	img := mkImage(t, 16<<10, func(testing.TB, string) {}, "-t", "ext4")
	mnt, um, err := hostLoopMount(t, img, false, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "f"), bytes.Repeat([]byte{'t'}, 200000), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(mnt, "keep"), []byte("kept"), 0o644)
	um()
	for _, cmd := range []string{"sif /f size 5000", "ssv last_orphan 12"} {
		if out, err := exec.Command("debugfs", "-w", "-R", cmd, img).CombinedOutput(); err != nil {
			t.Fatalf("debugfs %s: %v\n%s", cmd, err, out)
		}
	}
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	out["truncating"] = b

	// Files open and unlinked on a live kernel mount, copied after syncfs
	// (needs_recovery; the list in the journal and the superblock), and
	// the same left by a Writer never closed (a crash copy); with
	// orphan_file (the default of e2fsprogs upstream), the orphans are in
	// the orphan file and the superblock has ORPHAN_PRESENT.
	for _, v := range []struct{ suffix, features string }{{"", ""}, {"-orphan_file", "orphan_file,metadata_csum_seed"}} {
		args := []string{"-t", "ext4"}
		if v.features != "" {
			args = append(args, "-O", v.features)
		}
		img = mkImage(t, 16<<10, func(testing.TB, string) {}, args...)
		mnt, um, err = hostLoopMount(t, img, false, 0, "commit=600")
		if err != nil {
			t.Fatal(err)
		}
		var fds []int
		for i := 0; i < 4; i++ {
			p := filepath.Join(mnt, fmt.Sprintf("f%d", i))
			if err := os.WriteFile(p, bytes.Repeat([]byte{byte('a' + i)}, 30000*(i+1)), 0o644); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				fd, err := unix.Open(p, unix.O_RDONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				fds = append(fds, fd)
				os.Remove(p)
			}
		}
		syncfs(t, mnt)
		b, err = os.ReadFile(img)
		for _, fd := range fds {
			unix.Close(fd)
		}
		um()
		if err != nil {
			t.Fatal(err)
		}
		out["kernel-unlinked-open"+v.suffix] = b

		img = mkImage(t, 16<<10, func(testing.TB, string) {}, args...)
		b, err = os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		dev := memWDev{memDev(b)}
		w, err := disk.OpenWriter(dev, disk.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			ino, err := w.Create(2, fmt.Sprintf("f%d", i), 0o644, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteAt(ino, bytes.Repeat([]byte{byte('a' + i)}, 30000*(i+1)), 0); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				w.Hold(ino)
				if err := w.Unlink(2, fmt.Sprintf("f%d", i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		out["iovfs-unlinked-open"+v.suffix] = bytes.Clone(dev.memDev)
	}
	for name, b := range out {
		list := binary.LittleEndian.Uint32(b[1024+0xE8:]) != 0
		present := binary.LittleEndian.Uint32(b[1024+0x64:])&0x10000 != 0 // ORPHAN_PRESENT
		if strings.HasSuffix(name, "-orphan_file") && (list || !present) || !strings.HasSuffix(name, "-orphan_file") && !list {
			t.Fatalf("%s: orphans not where they belong: s_last_orphan %v, ORPHAN_PRESENT %v", name, list, present)
		}
	}
	return out
}

func TestReadOnlyMountOrphans(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	for name, img := range orphanImages(t) {
		for _, opts := range []string{"", "noload"} {
			t.Run(name+"/ro,"+opts, func(t *testing.T) {
				if opts == "noload" && testenv.Quick() {
					t.Skip("not in the quick sample; IOVFS_LONG=1 runs every case")
				}
				dir := t.TempDir()
				kimg := filepath.Join(dir, "k.img")
				if err := os.WriteFile(kimg, img, 0o600); err != nil {
					t.Fatal(err)
				}
				kmnt, kum, err := hostLoopMount(t, kimg, false, unix.MS_RDONLY, opts)
				if err != nil {
					t.Fatalf("kernel ro mount: %v", err)
				}
				oimg := filepath.Join(dir, "o.img")
				if err := os.WriteFile(oimg, img, 0o600); err != nil {
					t.Fatal(err)
				}
				p, dev, done := newProc(t, oimg, viaRAM)
				if err := p.Mount(dev, "/mnt", "ext4", unix.MS_RDONLY, opts); err != nil {
					t.Fatalf("iovfs ro mount: %v", err)
				}
				done()
				files := compareTree(t, p, "/mnt", kmnt, false) // the cleanup's times are each mount's clock: compared below
				if err := p.Unmount("/mnt", 0); err != nil {
					t.Fatal(err)
				}
				kum()
				ours := ramBytes(t, p, len(img))
				theirs, err := os.ReadFile(kimg)
				if err != nil {
					t.Fatal(err)
				}
				jb, bs := journalBlocks(t, theirs)
				changed := 0
				var diff []int
				for b := 0; b*bs < len(img); b++ {
					blk := func(x []byte) []byte { return x[b*bs : (b+1)*bs] }
					if b == 1024/bs || jb[uint64(b)] {
						continue
					}
					if !bytes.Equal(blk(img), blk(theirs)) {
						changed++
					}
					if !bytes.Equal(blk(ours), blk(theirs)) {
						diff = append(diff, b)
					}
				}
				if changed == 0 {
					t.Fatal("the kernel's ro mount freed nothing: no cleanup to compare")
				}
				// Inode table blocks may differ in the times the cleanup
				// set to the clock of its mount (ext4_truncate's mtime and
				// ctime) and the checksums over them: each side must have
				// set the same ones.
				itab := inodeTables(t, theirs)
				var rest []int
				for _, b := range diff {
					if !itab[b] || !sameButTimes(img[b*bs:(b+1)*bs], ours[b*bs:(b+1)*bs], theirs[b*bs:(b+1)*bs]) {
						rest = append(rest, b)
					}
				}
				diff = rest
				// Without its journal (noload) the kernel clears orphan
				// file slots without the block checksum, which only its
				// jbd2 trigger sets: its image keeps the stale checksum
				// and fails e2fsck ("Orphan file block is not clean").
				// iovfs sets the checksum.
				staleOF := false
				if opts == "noload" {
					ofb := orphanFileBlocks(t, theirs)
					rest = rest[:0]
					for _, b := range diff {
						blk := func(x []byte) []byte { return x[b*bs : (b+1)*bs] }
						if ofb[b] && bytes.Equal(blk(ours)[:bs-4], blk(theirs)[:bs-4]) && bytes.Equal(blk(theirs)[bs-4:], blk(img)[bs-4:]) {
							staleOF = true
							continue
						}
						rest = append(rest, b)
					}
					diff = rest
				}
				if len(diff) != 0 {
					t.Errorf("blocks differing from the kernel's: %v", diff)
					for _, b := range diff[:1] {
						for i := b * bs; i < (b+1)*bs; i++ {
							if ours[i] != theirs[i] {
								t.Logf("block %d +%#x: iovfs %#x kernel %#x before %#x", b, i-b*bs, ours[i], theirs[i], img[i])
							}
						}
					}
				}
				lo := func(x []byte) uint32 { return binary.LittleEndian.Uint32(x[1024+0xE8:]) }
				if lo(ours) != 0 || lo(theirs) != 0 {
					t.Errorf("s_last_orphan after the mount: iovfs %d, kernel %d", lo(ours), lo(theirs))
				}
				e2fsckN(t, ours)
				if !staleOF {
					e2fsckN(t, theirs)
				}
				t.Logf("%d files compared; the kernel's cleanup changed %d blocks outside the journal and the superblock, iovfs's the same", files, changed)

				// A read-only device: no cleanup, nothing written.
				nimg := filepath.Join(dir, "n.img")
				if err := os.WriteFile(nimg, img, 0o600); err != nil {
					t.Fatal(err)
				}
				if opts == "noload" || binary.LittleEndian.Uint32(img[1024+0x60:])&0x4 == 0 {
					_, nkum, err := hostLoopMount(t, nimg, true, unix.MS_RDONLY, opts)
					if err != nil {
						t.Fatalf("kernel ro mount of a read-only device: %v", err)
					}
					nkum()
					p3, dev3, done3 := newProc(t, oimg, viaLoop) // a read-only iovfs loop device
					if err := p3.Mount(dev3, "/mnt", "ext4", unix.MS_RDONLY, opts); err != nil {
						t.Fatalf("iovfs ro mount of a read-only device: %v", err)
					}
					done3()
					p3.Unmount("/mnt", 0)
					if b, _ := os.ReadFile(nimg); !bytes.Equal(b, img) {
						t.Error("the kernel wrote to a read-only device")
					}
					if b, _ := os.ReadFile(oimg); !bytes.Equal(b, img) {
						t.Error("iovfs wrote to a read-only device")
					}
				}
			})
		}
	}
}

// inodeTables lists img's inode table blocks (dumpe2fs).
func inodeTables(t *testing.T, img []byte) map[int]bool {
	f := filepath.Join(t.TempDir(), "d.img")
	if err := os.WriteFile(f, img, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("dumpe2fs", f).CombinedOutput()
	if err != nil {
		t.Fatalf("dumpe2fs: %v\n%s", err, out)
	}
	m := map[int]bool{}
	for _, r := range regexp.MustCompile(`Inode table at (\d+)-(\d+)`).FindAllStringSubmatch(string(out), -1) {
		a, _ := strconv.Atoi(r[1])
		b, _ := strconv.Atoi(r[2])
		for x := a; x <= b; x++ {
			m[x] = true
		}
	}
	return m
}

// sameButTimes reports whether inode table block ours equals theirs but
// for ctime, mtime and dtime (with the _extra words) and the checksums,
// and whether each side changed the same of those times from before.
func sameButTimes(before, ours, theirs []byte) bool {
	const isz = 256
	for ino := 0; ino+isz <= len(ours); ino += isz {
		b, o, k := before[ino:ino+isz], ours[ino:ino+isz], theirs[ino:ino+isz]
		skip := map[int]bool{}
		// A time is its seconds and its extra word together: the cleanup
		// may land in the same second as the image's times on one side
		// and in the next on the other, so only "changed or not" of the
		// whole timestamp must agree.
		for _, f := range [][]int{{0x0C, 0x84}, {0x10, 0x88}, {0x14}} { // ctime, mtime (with their _extra), dtime
			changedO, changedK := false, false
			for _, off := range f {
				changedO = changedO || !bytes.Equal(o[off:off+4], b[off:off+4])
				changedK = changedK || !bytes.Equal(k[off:off+4], b[off:off+4])
				for i := off; i < off+4; i++ {
					skip[i] = true
				}
			}
			if changedO != changedK {
				return false
			}
		}
		for _, i := range []int{0x7C, 0x7D, 0x82, 0x83} { // i_checksum_lo, _hi
			skip[i] = true
		}
		for i := range o {
			if !skip[i] && o[i] != k[i] {
				return false
			}
		}
	}
	return true
}
