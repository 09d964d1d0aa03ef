package ext4_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// corruptInodeCsum flips a byte of the checksum of the inode at path in
// img (found with debugfs imap).
func corruptInodeCsum(t *testing.T, img, path string) {
	t.Helper()
	out, err := exec.Command("debugfs", "-R", "imap "+path, img).Output()
	if err != nil {
		t.Fatalf("debugfs imap: %v", err)
	}
	var blk, off int64
	s := string(out)
	i := strings.Index(s, "located at block ")
	if i < 0 {
		t.Fatalf("debugfs imap: %s", out)
	}
	if _, err := fmt.Sscanf(s[i:], "located at block %d, offset 0x%x", &blk, &off); err != nil {
		t.Fatalf("debugfs imap %q: %v", s[i:], err)
	}
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	bs := int64(1024) << binary.LittleEndian.Uint32(b[1024+0x18:])
	b[blk*bs+off+0x7C] ^= 0xFF // i_checksum_lo
	if err := os.WriteFile(img, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// corruptDirBlockCsum flips a byte of the checksum tail of the first
// block of the directory at path in img (found with debugfs bmap).
func corruptDirBlockCsum(t *testing.T, img, path string) {
	t.Helper()
	out, err := exec.Command("debugfs", "-R", "bmap "+path+" 0", img).Output()
	if err != nil {
		t.Fatalf("debugfs bmap: %v", err)
	}
	var blk int64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "%d", &blk); err != nil || blk == 0 {
		t.Fatalf("debugfs bmap %q: %v", out, err)
	}
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	bs := int64(1024) << binary.LittleEndian.Uint32(b[1024+0x18:])
	b[(blk+1)*bs-1] ^= 0xFF // det_checksum
	if err := os.WriteFile(img, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// errorRecord is what ext4_error leaves in the superblock and the journal
// superblock, without the times and the source line (the kernel's).
func errorRecord(t *testing.T, img []byte) string {
	t.Helper()
	sb := img[1024:2048]
	le := binary.LittleEndian
	jb, bs := journalBlocks(t, img)
	first := ^uint64(0)
	for b := range jb {
		first = min(first, b)
	}
	js := img[first*uint64(bs):]
	cstr := func(b []byte) string { return string(bytes.TrimRight(b, "\x00")) }
	return fmt.Sprintf("state=%d needs_recovery=%v count=%d first(ino=%d blk=%d func=%s code=%d) last(ino=%d blk=%d func=%s code=%d) j_errno=%d",
		le.Uint16(sb[0x3A:]), le.Uint32(sb[0x60:])&4 != 0, le.Uint32(sb[0x194:]),
		le.Uint32(sb[0x19C:]), le.Uint64(sb[0x1A0:]), cstr(sb[0x1A8:0x1C8]), sb[0x27A],
		le.Uint32(sb[0x1D0:]), le.Uint64(sb[0x1D8:]), cstr(sb[0x1E0:0x200]), sb[0x27B],
		int32(binary.BigEndian.Uint32(js[0x20:])))
}

// TestErrorsBehaviorKernel mounts an image with a damaged inode checksum
// read-write in the kernel and in iovfs with each errors= behaviour the
// kernel can be given safely (not panic), looks the file up (EBADMSG,
// which the kernel reports through ext4_error), then tries to create a
// file: remount-ro refuses it with EROFS, continue allows it. The error
// record in the superblock (state, count, inode, function, code) and the
// journal's s_errno must match after unmount. Under remount-ro iovfs
// writes nothing but the two superblocks. errors=panic, which would stop
// the host, is checked on iovfs alone: it behaves as remount-ro.
func TestErrorsBehaviorKernel(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	for _, damage := range []struct {
		name    string
		corrupt func(t *testing.T, img string)
		// stat and create are the paths looked up and created.
		stat, create string
	}{
		{"inode-csum", func(t *testing.T, img string) { corruptInodeCsum(t, img, "/f") }, "f", "g"},
		{"dirblock-csum", func(t *testing.T, img string) { corruptDirBlockCsum(t, img, "/d") }, "d/x", "d/y"},
	} {
		base := mkImage(t, 8<<10, func(tb testing.TB, dir string) {
			os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644)
			os.Mkdir(filepath.Join(dir, "d"), 0o755)
			os.WriteFile(filepath.Join(dir, "d", "x"), []byte("data"), 0o644)
		}, "-t", "ext4")
		damage.corrupt(t, base)
		orig, err := os.ReadFile(base)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"remount-ro", "continue", "", "panic", "s_errors=remount-ro"} {
			t.Run(damage.name+"/errors="+mode, func(t *testing.T) {
				opts, orig := "", orig
				switch {
				case mode == "s_errors=remount-ro":
					// No option: the superblock's s_errors decides.
					orig = bytes.Clone(orig)
					binary.LittleEndian.PutUint16(orig[1024+0x3C:], 2)
					binary.LittleEndian.PutUint32(orig[1024+0x3FC:], ^crc32.Checksum(orig[1024:1024+0x3FC], crc32.MakeTable(crc32.Castagnoli)))
				case mode != "":
					opts = "errors=" + mode
				}
				var kstat, kcreate error
				var theirs []byte
				if mode != "panic" {
					kimg := filepath.Join(t.TempDir(), "k.img")
					if err := os.WriteFile(kimg, orig, 0o600); err != nil {
						t.Fatal(err)
					}
					kmnt, kum, err := hostLoopMount(t, kimg, false, 0, opts)
					if err != nil {
						t.Fatalf("kernel mount: %v", err)
					}
					var st unix.Stat_t
					kstat = unix.Stat(filepath.Join(kmnt, damage.stat), &st)
					fd, err := unix.Open(filepath.Join(kmnt, damage.create), unix.O_CREAT|unix.O_WRONLY, 0o644)
					kcreate = err
					if err == nil {
						unix.Close(fd)
					}
					kum()
					if theirs, err = os.ReadFile(kimg); err != nil {
						t.Fatal(err)
					}
				}
				oimg := filepath.Join(t.TempDir(), "o.img")
				if err := os.WriteFile(oimg, orig, 0o600); err != nil {
					t.Fatal(err)
				}
				p, dev, done := newProc(t, oimg, viaRAM)
				if err := p.Mount(dev, "/mnt", "ext4", 0, opts); err != nil {
					t.Fatalf("iovfs mount: %v", err)
				}
				done()
				mounted := ramBytes(t, p, len(orig))
				_, ostat := p.Stat("/mnt/" + damage.stat)
				fd, ocreate := p.Open("/mnt/"+damage.create, unix.O_CREAT|unix.O_WRONLY, 0o644)
				if ocreate == nil {
					p.Close(fd)
				}
				if err := p.Unmount("/mnt", 0); err != nil {
					t.Fatalf("unmount: %v", err)
				}
				ours := ramBytes(t, p, len(orig))
				t.Logf("iovfs: stat %v, create %v; %s", ostat, ocreate, errorRecord(t, ours))
				if mode == "panic" {
					if errnoOf(ostat) != unix.EBADMSG || errnoOf(ocreate) != unix.EROFS && errnoOf(ocreate) != unix.EBADMSG {
						t.Errorf("errors=panic: stat %v, create %v; want EBADMSG, EROFS", ostat, ocreate)
					}
					return
				}
				t.Logf("kernel: stat %v, create %v; %s", kstat, kcreate, errorRecord(t, theirs))
				if errnoOf(ostat) != errnoOf(kstat) || errnoOf(ocreate) != errnoOf(kcreate) {
					t.Errorf("stat %v, create %v; kernel %v, %v", ostat, ocreate, kstat, kcreate)
				}
				if o, k := errorRecord(t, ours), errorRecord(t, theirs); o != k {
					t.Errorf("error record:\niovfs  %s\nkernel %s", o, k)
				}
				if mode == "remount-ro" || mode == "s_errors=remount-ro" {
					// Only the superblock and the journal superblock changed
					// after the mount.
					jb, bs := journalBlocks(t, ours)
					jfirst := ^uint64(0)
					for b := range jb {
						jfirst = min(jfirst, b)
					}
					for b := 0; b*bs < len(ours); b++ {
						if b == 1024/bs || uint64(b) == jfirst {
							continue
						}
						if !bytes.Equal(ours[b*bs:(b+1)*bs], mounted[b*bs:(b+1)*bs]) {
							t.Errorf("block %d written after the error", b)
						}
					}
				}
			})
		}
	}
}
