package ext4_test

// The superblock's mount bookkeeping against the kernel's: the same image
// mounted read-write by the kernel and by iovfs, a file created in each,
// the image read while mounted and after the unmount. Both must leave the
// same mount count, maximal mount count, state and feature flags, a mount
// and write time from the test's minutes, s_last_mounted naming each one's
// mount point, and more lifetime writes than before; and e2fsck without
// -f must find a copy taken while mounted "not cleanly unmounted" on both
// when there is no journal.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/internal/testenv"
)

// sbFields are the superblock fields a mount changes.
type sbFields struct {
	mntCount, maxMntCount, state uint16
	incompat, rocompat           uint32
	mtime, wtime                 int64
	lastMounted                  string
	kbytesWritten                uint64
}

func readSB(img []byte) sbFields {
	sb := img[1024:2048]
	le := binary.LittleEndian
	ts := func(lo, hi int) int64 { return int64(le.Uint32(sb[lo:])) | int64(sb[hi])<<32 }
	return sbFields{
		mntCount:      le.Uint16(sb[0x34:]),
		maxMntCount:   le.Uint16(sb[0x36:]),
		state:         le.Uint16(sb[0x3A:]),
		incompat:      le.Uint32(sb[0x60:]),
		rocompat:      le.Uint32(sb[0x64:]),
		mtime:         ts(0x2C, 0x275),
		wtime:         ts(0x30, 0x274),
		lastMounted:   string(bytes.TrimRight(sb[0x88:0xC8], "\x00")),
		kbytesWritten: le.Uint64(sb[0x178:]),
	}
}

// journalFeatures returns the journal superblock's compat, incompat and
// checksum type words of img, or "" without a journal.
func journalFeatures(t *testing.T, img []byte) string {
	t.Helper()
	if binary.LittleEndian.Uint32(img[1024+0x5C:])&0x4 == 0 {
		return ""
	}
	jb, bs := journalBlocks(t, img)
	first := ^uint64(0)
	for b := range jb {
		first = min(first, b)
	}
	js := img[first*uint64(bs):]
	return fmt.Sprintf("compat=%#x incompat=%#x csum_type=%d", binary.BigEndian.Uint32(js[0x24:]), binary.BigEndian.Uint32(js[0x28:]), js[0x50])
}

// syncfs is syncfs(2) on the kernel mount at dir (never sync(2), which
// waits on every mount of the machine).
func syncfs(t *testing.T, dir string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Syncfs(fd)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
}

// fsckPreen runs e2fsck -n without -f on img and returns its output.
func fsckPreen(t *testing.T, img []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "p.img")
	if err := os.WriteFile(f, img, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("e2fsck", "-n", f).CombinedOutput()
	return string(out)
}

// mountWarnings opens img with a Writer and returns what it logged.
func mountWarnings(t *testing.T, img []byte) string {
	t.Helper()
	var logs []string
	w, err := disk.OpenWriter(memWDevX(bytes.Clone(img)), disk.Options{Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	return strings.Join(logs, "\n")
}

// fsckReason is what e2fsck -n without -f decided.
func fsckReason(out string) string {
	switch {
	case strings.Contains(out, "was not cleanly unmounted"):
		return "not cleanly unmounted"
	case strings.Contains(out, "without being checked"):
		return "maximal mount count"
	case strings.Contains(out, "skipping journal recovery"):
		return "needs journal recovery"
	case strings.Contains(out, ": clean,"):
		return "clean"
	}
	return out
}

func TestMountBookkeepingKernel(t *testing.T) {
	needMke2fs(t)
	testenv.RequireRoot(t, "kernel loop mounts")
	testenv.RequireTool(t, "e2fsck", "debugfs")
	for _, tc := range []struct {
		name string
		mkfs []string
		ssv  string // debugfs set_super_value before the mounts
		mnt  string // iovfs's mount point
		data string // mount options of both
	}{
		{"ext4", []string{"-t", "ext4"}, "", "/media/disk", ""},
		{"ext2", []string{"-t", "ext2"}, "", "/media/disk", ""},
		{"ext4-maxmnt0", []string{"-t", "ext4"}, "max_mnt_count 0", "/media/disk", ""},
		{"ext4-nocsum-no64bit", []string{"-t", "ext4", "-O", "^metadata_csum,^64bit"}, "", "/media/disk", ""},
		{"ext3", []string{"-t", "ext3"}, "", "/media/disk", ""},
		{"ext4-orphan_file", []string{"-t", "ext4", "-O", "orphan_file,metadata_csum_seed"}, "", "/media/disk", ""},
		{"ext4-nojournal_checksum", []string{"-t", "ext4"}, "", "/media/disk", "nojournal_checksum"},
		{"ext4-journal_checksum-last-no", []string{"-t", "ext4"}, "", "/media/disk", "journal_checksum,nojournal_checksum"},
		// A mount point of 64 bytes is not recorded (d_path into 64 bytes).
		{"ext2-maxmnt3-count5", []string{"-t", "ext2"}, "max_mnt_count 3", "/media/" + strings.Repeat("d", 57), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.Sampled(t, "ext4", "ext2-maxmnt3-count5", "ext4-orphan_file")
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			if out, err := exec.Command("mke2fs", append(append([]string{"-q", "-F"}, tc.mkfs...), base, "8M")...).CombinedOutput(); err != nil {
				t.Fatalf("mke2fs: %v\n%s", err, out)
			}
			if tc.ssv != "" {
				for _, req := range []string{"ssv " + tc.ssv, "ssv mnt_count 5"} {
					if out, err := exec.Command("debugfs", "-w", "-R", req, base).CombinedOutput(); err != nil {
						t.Fatalf("debugfs %s: %v\n%s", req, err, out)
					}
				}
			}
			orig, err := os.ReadFile(base)
			if err != nil {
				t.Fatal(err)
			}
			before := readSB(orig)
			start := time.Now().Unix()

			// The kernel.
			kimg := filepath.Join(dir, "k.img")
			if err := os.WriteFile(kimg, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			kmnt, kum, err := hostLoopMount(t, kimg, false, 0, tc.data)
			if err != nil {
				t.Fatalf("kernel mount: %v", err)
			}
			if err := os.WriteFile(filepath.Join(kmnt, "f"), []byte("data"), 0o644); err != nil {
				t.Fatal(err)
			}
			syncfs(t, kmnt)
			kDuring, err := os.ReadFile(kimg)
			if err != nil {
				t.Fatal(err)
			}
			kum()
			kAfter, err := os.ReadFile(kimg)
			if err != nil {
				t.Fatal(err)
			}

			// iovfs.
			p, dev, _ := newProc(t, base, viaRAM)
			if err := p.Mkdir("/media", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := p.Mkdir(tc.mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := p.Mount(dev, tc.mnt, "ext4", 0, tc.data); err != nil {
				t.Fatal(err)
			}
			fd, err := p.Open(tc.mnt+"/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Write(fd, []byte("data")); err != nil {
				t.Fatal(err)
			}
			if err := p.Fsync(fd); err != nil {
				t.Fatal(err)
			}
			p.Close(fd)
			oDuring := ramBytes(t, p, len(orig))
			if err := p.Unmount(tc.mnt, 0); err != nil {
				t.Fatal(err)
			}
			oAfter := ramBytes(t, p, len(orig))
			end := time.Now().Unix()

			for _, c := range []struct {
				when          string
				kernel, iovfs []byte
			}{{"while mounted", kDuring, oDuring}, {"after the unmount", kAfter, oAfter}} {
				k, o := readSB(c.kernel), readSB(c.iovfs)
				if k.mntCount != o.mntCount || k.maxMntCount != o.maxMntCount || k.state != o.state || k.incompat != o.incompat || k.rocompat != o.rocompat {
					t.Errorf("%s: mount count, max, state, incompat, ro_compat: kernel %d %d %#x %#x %#x, iovfs %d %d %#x %#x %#x (before %d %d %#x %#x %#x)", c.when,
						k.mntCount, int16(k.maxMntCount), k.state, k.incompat, k.rocompat, o.mntCount, int16(o.maxMntCount), o.state, o.incompat, o.rocompat,
						before.mntCount, int16(before.maxMntCount), before.state, before.incompat, before.rocompat)
				}
				for _, x := range []struct {
					who string
					f   sbFields
					mnt string
				}{{"kernel", k, kmnt}, {"iovfs", o, tc.mnt}} {
					if len(x.mnt) > 63 {
						x.mnt = ""
					}
					if x.f.mtime < start || x.f.mtime > end || x.f.wtime < x.f.mtime || x.f.wtime > end {
						t.Errorf("%s, %s: s_mtime %d, s_wtime %d, want within %d..%d", c.when, x.who, x.f.mtime, x.f.wtime, start, end)
					}
					if x.f.lastMounted != x.mnt {
						t.Errorf("%s, %s: s_last_mounted %q, want %q", c.when, x.who, x.f.lastMounted, x.mnt)
					}
					if x.f.kbytesWritten <= before.kbytesWritten && c.when != "while mounted" {
						t.Errorf("%s, %s: s_kbytes_written %d, %d before", c.when, x.who, x.f.kbytesWritten, before.kbytesWritten)
					}
				}
				if kj, oj := journalFeatures(t, c.kernel), journalFeatures(t, c.iovfs); kj != oj {
					t.Errorf("%s: journal features: kernel %s, iovfs %s (before %s)", c.when, kj, oj, journalFeatures(t, orig))
				}
				if c.when == "after the unmount" {
					t.Logf("kernel: %+v\niovfs:  %+v\nbefore: %+v", k, o, before)
				}
			}
			// e2fsck -n, not forced, must decide alike on both: a copy of
			// a volume without a journal taken while mounted is checked
			// ("not cleanly unmounted"), as is one past its maximal
			// mount count; otherwise the unmounted volume is clean.
			for _, c := range []struct {
				when          string
				kernel, iovfs []byte
			}{{"while mounted", kDuring, oDuring}, {"after the unmount", kAfter, oAfter}} {
				ko, oo := fsckPreen(t, c.kernel), fsckPreen(t, c.iovfs)
				if fsckReason(ko) != fsckReason(oo) {
					t.Errorf("e2fsck -n %s: kernel's image %q, iovfs's %q\nkernel:\n%s\niovfs:\n%s", c.when, fsckReason(ko), fsckReason(oo), ko, oo)
				}
				want := "clean"
				switch {
				case strings.HasPrefix(tc.name, "ext2") && c.when == "while mounted":
					want = "not cleanly unmounted"
				case strings.HasPrefix(tc.name, "ext2-maxmnt3"):
					want = "maximal mount count"
				case c.when == "while mounted":
					want = "needs journal recovery"
				}
				if fsckReason(oo) != want {
					t.Errorf("e2fsck -n %s of iovfs's image: %q, want %q:\n%s", c.when, fsckReason(oo), want, oo)
				}
				// ext4_setup_super's warnings, from the same state.
				warn := map[string]string{
					"not cleanly unmounted": "warning: mounting unchecked fs, running e2fsck is recommended",
					"maximal mount count":   "warning: maximal mount count reached, running e2fsck is recommended",
				}[want]
				if got := mountWarnings(t, c.iovfs); warn != "" && !strings.Contains(got, warn) || warn == "" && strings.Contains(got, "warning") {
					t.Errorf("mounting iovfs's image %s again logs %q, want %q", c.when, got, warn)
				}
			}
		})
	}
}
