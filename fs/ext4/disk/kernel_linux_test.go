package disk

// Differential tests against the host kernel's ext4: images are populated
// through a read-write loop mount (so the kernel makes fragmented extent
// trees, unwritten extents, htree directories, inline data and xattrs), then
// compared between a read-only kernel mount and this reader.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("mount"); err == nil {
			return
		}
	}
	testenv.SkipPrivileged(t, "kernel ext4 loop mounts need root and mount(8)")
}

// kmount loop-mounts img at a new directory and unmounts it at cleanup (or
// earlier through the returned func). mount(8) sets up the loop device with
// autoclear, so unmounting releases it.
func kmount(t *testing.T, img string, opts string) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	// testenv.Mount retries the EBUSY of a loop device still being torn
	// down (right after an unmount of the same image) or taken by another
	// test package's mount at the same moment.
	if out, err := testenv.Mount("-t", "ext4", "-o", "loop,"+opts, img, dir); err != nil {
		t.Fatalf("mount %s: %v\n%s", img, err, out)
	}
	done := false
	um := func() {
		if done {
			return
		}
		done = true
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
			// Never leave a mount (and its loop device) behind.
			exec.Command("umount", "-l", dir).Run()
		}
	}
	t.Cleanup(um)
	return dir, um
}

// populate writes the hard cases through the kernel into mnt.
func populate(t *testing.T, mnt string) {
	t.Helper()
	r := rand.New(rand.NewSource(4))
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Interleaved, synced appends fragment four files.
	must(os.Mkdir(filepath.Join(mnt, "frag"), 0o755))
	var fs []*os.File
	defer func() {
		for _, f := range fs {
			f.Close()
		}
	}()
	for i := 0; i < 4; i++ {
		f, err := os.OpenFile(filepath.Join(mnt, "frag", fmt.Sprint("f", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		must(err)
		fs = append(fs, f)
	}
	for n := 0; n < 450; n++ {
		for _, f := range fs {
			_, err := f.Write(randBytes(r, 1024+r.Intn(2)*1024))
			must(err)
			must(f.Sync())
		}
	}
	// Unwritten extents: inside the size, and past it with KEEP_SIZE
	// (extent-mapped files only; ext3 has no fallocate).
	f, err := os.Create(filepath.Join(mnt, "falloc"))
	must(err)
	defer f.Close()
	_, err = f.Write(randBytes(r, 10000))
	must(err)
	if err := unix.Fallocate(int(f.Fd()), 0, 10000, 1<<20); err == nil {
		_, err = f.WriteAt(randBytes(r, 3000), 300000)
		must(err)
		must(unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 4<<20, 1<<20))
	} else if !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatal(err)
	}
	// Sparse file over 4 GiB.
	h, err := os.Create(filepath.Join(mnt, "huge"))
	must(err)
	defer h.Close()
	_, err = h.WriteAt(randBytes(r, 5000), 5<<30)
	must(err)
	// Xattrs in every namespace root can write, small and block-sized.
	x := filepath.Join(mnt, "xattrs")
	must(os.WriteFile(x, []byte("x"), 0o600))
	must(unix.Setxattr(x, "user.small", []byte("1"), 0))
	must(unix.Setxattr(x, "user.big", randBytes(r, 700), 0))
	must(unix.Setxattr(x, "trusted.t", []byte("trusted value"), 0))
	must(unix.Setxattr(x, "security.s", []byte("sec"), 0))
	// Larger than a block: stored in an EA inode where the feature is on,
	// refused (ENOSPC/E2BIG) elsewhere.
	if err := unix.Setxattr(x, "user.huge", randBytes(r, 20000), 0); err != nil &&
		!errors.Is(err, unix.ENOSPC) && !errors.Is(err, unix.E2BIG) {
		t.Fatal(err)
	}
	acl := []byte{2, 0, 0, 0, // version 2
		1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, // USER_OBJ rw
		2, 0, 4, 0, 0xe8, 0x03, 0, 0, // USER 1000 r
		4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, // GROUP_OBJ r
		0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, // MASK r
		0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff} // OTHER
	if err := unix.Setxattr(x, "system.posix_acl_access", acl, 0); err != nil {
		t.Logf("no POSIX ACLs on the host kernel: %v", err)
	}
	// A big htree directory, small inline-able files and directories,
	// symlinks of every kind, hard links and devices.
	must(os.Mkdir(filepath.Join(mnt, "big"), 0o755))
	for i := 0; i < 3000; i++ {
		must(os.WriteFile(filepath.Join(mnt, "big", fmt.Sprintf("n%d-%x", i, r.Int63())), nil, 0o644))
	}
	must(os.MkdirAll(filepath.Join(mnt, "small/sub"), 0o750))
	must(os.WriteFile(filepath.Join(mnt, "small/a"), []byte("tiny"), 0o644))
	must(os.WriteFile(filepath.Join(mnt, "small/b"), randBytes(r, 150), 0o644))
	must(os.Symlink("a", filepath.Join(mnt, "small/l1")))
	must(os.Symlink(strings.Repeat("long/", 40), filepath.Join(mnt, "small/l2")))
	must(os.Link(filepath.Join(mnt, "small/a"), filepath.Join(mnt, "small/a2")))
	must(unix.Mknod(filepath.Join(mnt, "small/chr"), unix.S_IFCHR|0o600, int(unix.Mkdev(4, 70000))))
	must(os.Lchown(filepath.Join(mnt, "small/b"), 100000, 200000))
}

func TestKernelDifferential(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"ext4-1k", []string{"-t", "ext4", "-b", "1024", "-N", "8192"}},
		{"ext4-4k-inline", []string{"-t", "ext4", "-O", "inline_data", "-N", "8192"}},
		{"ext3", []string{"-t", "ext3", "-N", "8192"}},
		{"ext2-1k", []string{"-t", "ext2", "-b", "1024", "-N", "8192"}},
		{"no-csum-32bit", []string{"-t", "ext4", "-O", "^metadata_csum,^64bit", "-N", "8192"}},
		{"inode128", []string{"-t", "ext4", "-I", "128", "-N", "8192"}},
		{"ea_inode-2k", []string{"-t", "ext4", "-b", "2048", "-O", "ea_inode", "-N", "8192"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.Sampled(t, "ext4-1k")
			img := mkfs(t, "", "128M", tc.args...)
			mnt, um := kmount(t, img, "rw")
			populate(t, mnt)
			um()
			ro, _ := kmount(t, img, "ro,noload")
			v := openImage(t, img, Options{})
			compareKernel(t, v, ro)
			if strings.Contains(tc.name, "ea_inode") {
				in, err := resolve(v, "xattrs")
				if err != nil {
					t.Fatal(err)
				}
				if val, err := v.GetXattr(in, "user.huge"); err != nil || len(val) != 20000 {
					t.Errorf("EA-inode xattr: %d bytes, %v", len(val), err)
				}
			}
		})
	}
}

// compareKernel walks the kernel's read-only mount and checks the reader
// against it: stat fields, bytes, listings, link targets and xattrs.
func compareKernel(t *testing.T, v *Volume, mnt string) {
	t.Helper()
	var nfiles int
	err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		if rel == "." {
			rel = ""
		}
		in, err := resolve(v, rel)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if uint64(in.Ino) != st.Ino || in.Mode != st.Mode || in.Nlink != uint32(st.Nlink) || in.Uid != st.Uid ||
			in.Gid != st.Gid || in.Size != uint64(st.Size) || in.Blocks != uint64(st.Blocks) || in.Rdev != st.Rdev {
			t.Errorf("%s: ino %d mode %o nlink %d uid %d gid %d size %d blocks %d rdev %x; kernel %d %o %d %d %d %d %d %x",
				rel, in.Ino, in.Mode, in.Nlink, in.Uid, in.Gid, in.Size, in.Blocks, in.Rdev,
				st.Ino, st.Mode, st.Nlink, st.Uid, st.Gid, st.Size, st.Blocks, st.Rdev)
		}
		if in.Mtime != (Timespec{st.Mtim.Sec, st.Mtim.Nsec}) || in.Ctime != (Timespec{st.Ctim.Sec, st.Ctim.Nsec}) {
			t.Errorf("%s: mtime %v ctime %v; kernel %v %v", rel, in.Mtime, in.Ctime, st.Mtim, st.Ctim)
		}
		switch {
		case d.Type().IsRegular():
			nfiles++
			if st.Size > 64<<20 {
				checkHuge(t, v, in, p)
				break
			}
			want, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if got := readAll(t, v, in); !bytes.Equal(got, want) {
				t.Errorf("%s: content differs", rel)
			}
		case d.Type()&fs.ModeSymlink != 0:
			want, _ := os.Readlink(p)
			if got, err := v.Readlink(in); err != nil || got != want {
				t.Errorf("%s: readlink %q %v, kernel %q", rel, got, err, want)
			}
		case d.IsDir():
			ents, _ := os.ReadDir(p)
			var want, got []string
			for _, e := range ents {
				want = append(want, e.Name())
			}
			if err := v.ReadDir(in, func(name []byte, _ uint32, _ uint8) bool {
				got = append(got, string(name))
				return true
			}); err != nil {
				t.Errorf("%s: ReadDir: %v", rel, err)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: listing: %d names, kernel %d", rel, len(got), len(want))
			}
		}
		compareXattrs(t, v, in, p, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	frag, err := resolve(v, "frag/f0")
	if err == nil && frag.Flags&FlagExtents != 0 {
		t.Logf("frag/f0 extent depth %d", le16(frag.iblock(), 6))
	}
}

func compareXattrs(t *testing.T, v *Volume, in *Inode, p, rel string) {
	t.Helper()
	buf := make([]byte, 65536)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		return
	}
	var want []string
	for _, s := range strings.Split(string(buf[:n]), "\x00") {
		if s != "" {
			want = append(want, s)
		}
	}
	got, err := v.ListXattr(in)
	if err != nil {
		t.Errorf("%s: ListXattr: %v", rel, err)
		return
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s: xattrs %q, kernel %q", rel, got, want)
	}
	for _, name := range want {
		k, err := unix.Lgetxattr(p, name, buf)
		if err != nil {
			continue
		}
		g, err := v.GetXattr(in, name)
		if err != nil || !bytes.Equal(g, buf[:k]) {
			t.Errorf("%s: xattr %s = %x, %v; kernel %x", rel, name, g, err, buf[:k])
		}
	}
}

// TestKernelCorruptionErrno damages an inode, an extent block and a
// directory block of a metadata_csum image and compares the errno with the
// kernel's for the same access. The kernel's page-cache read turns a
// mapping failure into EIO; there the reader must still give the precise
// EBADMSG.
func TestKernelCorruptionErrno(t *testing.T) {
	needRoot(t)
	img, _, _ := fragImage(t)
	v, err := Open(BytesDevice(img), Options{})
	if err != nil {
		t.Fatal(err)
	}
	loc := locate(t, v)
	pad, err := resolve(v, "pad")
	if err != nil {
		t.Fatal(err)
	}
	m, err := v.MapBlocks(pad, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		off  int64
		path string
	}{
		{"inode", loc.victimInode + 0x10, "victim"},
		{"extent-block", loc.extentBlock + 16, "frag"},
		// Linux's linear readdir skips a block that fails its checksum
		// (and logs it); a lookup fails. Compare the lookup.
		{"dir-block", int64(m.Physical<<v.bsBits) + 30, "pad/p0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := bytes.Clone(img)
			b[c.off] ^= 0x40
			p := filepath.Join(t.TempDir(), "img")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			mnt, _ := kmount(t, p, "ro,noload")
			var kerr error
			_, kerr = os.ReadFile(filepath.Join(mnt, c.path))
			var kno syscall.Errno
			if !errors.As(kerr, &kno) {
				t.Fatalf("kernel access to damaged %s: %v, want an errno", c.path, kerr)
			}
			v, err := Open(BytesDevice(b), Options{})
			if err != nil {
				t.Fatal(err)
			}
			in, err := resolve(v, c.path)
			if err == nil {
				_, err = v.ReadAt(in, nil, make([]byte, 4096), 0)
			}
			want := kno
			if kno == syscall.EIO {
				want = syscall.EBADMSG
			}
			if !errors.Is(err, want) {
				t.Errorf("reader: %v; kernel: %v", err, kerr)
			}
			t.Logf("kernel %v; reader %v", kerr, err)
		})
	}
}
