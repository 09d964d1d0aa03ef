package ext4_test

// The blocks ext4 reserves for root through the VFS: a read-write mount's
// writes, creations and fallocates act for the process that makes them
// (the opener's vfs.Cred for open files, the Cred of every other call), so
// an unprivileged process gets ENOSPC where root still writes, as on
// Linux (ext4_has_free_clusters). Each process's results must equal those
// of the Writer told the same caller (Writer.Caller), whose counts
// TestWriterENOSPCDifferential matches with the kernel's for root and for
// uid 1000.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// reserveStep is one result of a fill: the call, its count and errno.
type reserveStep struct {
	op    string
	n     int
	errno syscall.Errno
}

func errnoOfErr(err error) syscall.Errno {
	var e syscall.Errno
	if err == nil || !errors.As(err, &e) {
		if err != nil {
			return syscall.EIO
		}
		return 0
	}
	return e
}

// reserveChunk is the size of each write of a fill.
const reserveChunk = 48 << 10

// fillVFS fills the volume mounted at /mnt as p: 48 KiB writes to
// /mnt/f until a write fails, then a mkdir, a fallocate of another file
// and one more write.
func fillVFS(t *testing.T, p *vfs.Proc) (steps []reserveStep, st unix.Statfs_t) {
	t.Helper()
	fd, err := p.Open("/mnt/f", unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, 0o644)
	if err != nil {
		t.Fatalf("open /mnt/f: %v", err)
	}
	buf := make([]byte, reserveChunk)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	off := int64(0)
	for {
		n, err := p.Pwrite(fd, buf, off)
		off += int64(n)
		steps = append(steps, reserveStep{"write", n, errnoOfErr(err)})
		if err != nil || n < len(buf) || len(steps) > 1000 {
			break
		}
	}
	// Then 1 KiB appends until none goes in: what the caller may take is
	// gone to the block.
	for i := 0; i < 2000; i++ {
		n, err := p.Pwrite(fd, buf[:1024], off)
		off += int64(n)
		if n == 0 {
			steps = append(steps, reserveStep{"topup", i, errnoOfErr(err)})
			break
		}
	}
	p.Close(fd)
	steps = append(steps, reserveStep{"mkdir", 0, errnoOfErr(p.Mkdir("/mnt/d", 0o755))})
	fd, err = p.Open("/mnt/g", unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, 0o644)
	steps = append(steps, reserveStep{"create", 0, errnoOfErr(err)})
	if err == nil {
		steps = append(steps, reserveStep{"fallocate", 0, errnoOfErr(p.Fallocate(fd, 0, 0, 64<<10))})
		n, err := p.Pwrite(fd, buf[:8<<10], 64<<10)
		steps = append(steps, reserveStep{"write", n, errnoOfErr(err)})
		p.Close(fd)
	}
	// An xattr too big for the inode takes a block (setxattr, then a
	// plain rename and a link, which need none here).
	steps = append(steps, reserveStep{"setxattr", 0, errnoOfErr(p.Setxattr("/mnt/f", "user.big", buf[:600], 0))})
	steps = append(steps, reserveStep{"rename", 0, errnoOfErr(p.Rename("/mnt/f", "/mnt/f2"))})
	steps = append(steps, reserveStep{"link", 0, errnoOfErr(p.Link("/mnt/f2", "/mnt/f3"))})
	st, err = p.Statfs("/mnt")
	if err != nil {
		t.Fatal(err)
	}
	return steps, st
}

// fillWriter is fillVFS on the Writer, acting for c.
func fillWriter(t *testing.T, img []byte, c disk.Caller, uid, gid uint32) ([]reserveStep, unix.Statfs_t) {
	t.Helper()
	w, err := disk.OpenWriter(memWDevX(img), disk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Caller = c
	const root = 2
	f, err := w.Create(root, "f", 0o644, uid, gid)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, reserveChunk)
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	var steps []reserveStep
	off := int64(0)
	for {
		n, err := w.WriteAt(f, buf, off)
		off += int64(n)
		steps = append(steps, reserveStep{"write", n, errnoOfErr(err)})
		if err != nil || n < len(buf) || len(steps) > 1000 {
			break
		}
	}
	for i := 0; i < 2000; i++ {
		n, err := w.WriteAt(f, buf[:1024], off)
		off += int64(n)
		if n == 0 {
			steps = append(steps, reserveStep{"topup", i, errnoOfErr(err)})
			break
		}
	}
	_, err = w.Mkdir(root, "d", 0o755, uid, gid)
	steps = append(steps, reserveStep{"mkdir", 0, errnoOfErr(err)})
	g, err := w.Create(root, "g", 0o644, uid, gid)
	steps = append(steps, reserveStep{"create", 0, errnoOfErr(err)})
	if err == nil {
		steps = append(steps, reserveStep{"fallocate", 0, errnoOfErr(w.Fallocate(g, 0, 0, 64<<10))})
		n, err := w.WriteAt(g, buf[:8<<10], 64<<10)
		steps = append(steps, reserveStep{"write", n, errnoOfErr(err)})
	}
	steps = append(steps, reserveStep{"setxattr", 0, errnoOfErr(w.Setxattr(f, "user.big", buf[:600], 0))})
	steps = append(steps, reserveStep{"rename", 0, errnoOfErr(w.Rename(root, "f", root, "f2"))})
	steps = append(steps, reserveStep{"link", 0, errnoOfErr(w.Link(root, "f3", f))})
	return steps, w.Statfs()
}

func TestVFSRootReservedBlocks(t *testing.T) {
	needMke2fs(t)
	for _, tc := range []struct {
		name     string
		uid, gid int
		groups   []int
		resgid   string // tune2fs -g
		reserved bool   // may take the root reserve
	}{
		{"root", 0, 0, nil, "", true},
		{"uid1000", 1000, 1000, nil, "", false},
		{"uid1000-not-resgid", 1000, 1000, []int{3000}, "2000", false},
		{"uid1000-in-resgid", 1000, 1000, []int{2000}, "2000", true},
		{"fsgid-resgid", 1000, 2000, nil, "2000", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "r.img")
			if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", "-m", "20",
				"-E", fmt.Sprintf("root_owner=%d:%d", tc.uid, tc.gid), img, "2M").CombinedOutput(); err != nil {
				t.Fatalf("mke2fs: %v\n%s", err, out)
			}
			if tc.resgid != "" {
				if out, err := exec.Command("tune2fs", "-g", tc.resgid, img).CombinedOutput(); err != nil {
					t.Fatalf("tune2fs: %v\n%s", err, out)
				}
			}
			orig, err := os.ReadFile(img)
			if err != nil {
				t.Fatal(err)
			}
			p, dev, _ := newProc(t, img, viaRAM)
			if err := p.Mount(dev, "/mnt", "ext4", 0, ""); err != nil {
				t.Fatal(err)
			}
			q := p
			if tc.uid != 0 || tc.gid != 0 {
				q = vfs.NewProcCred(p.Namespace(), tc.uid, tc.gid, tc.groups...)
			}
			got, gst := fillVFS(t, q)
			groups := make([]uint32, len(tc.groups))
			for i, g := range tc.groups {
				groups[i] = uint32(g)
			}
			c := disk.Caller{Uid: uint32(tc.uid), Gid: uint32(tc.gid), Groups: groups}
			want, wst := fillWriter(t, orig, c, uint32(tc.uid), uint32(tc.gid))
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("through the VFS as %d:%d%v:\n %v\nthe Writer acting for %+v:\n %v", tc.uid, tc.gid, tc.groups, got, c, want)
			}
			if gst.Bfree != wst.Bfree || gst.Bavail != wst.Bavail || gst.Ffree != wst.Ffree {
				t.Errorf("statfs: VFS bfree %d bavail %d ffree %d, Writer %d %d %d", gst.Bfree, gst.Bavail, gst.Ffree, wst.Bfree, wst.Bavail, wst.Ffree)
			}
			// The root reserve (-m 20: 409 of the 2,048 blocks) is what
			// tells the two kinds of caller apart; s_resv_clusters (2%:
			// 40 blocks) stays free for both.
			last := got[len(got)-4] // the second file's write
			switch {
			case tc.reserved && gst.Bfree > 64:
				t.Errorf("a caller that may take the reserve stopped with %d blocks free (%v)", gst.Bfree, got)
			case !tc.reserved && gst.Bfree < 400:
				t.Errorf("an unprivileged caller took the reserve: %d blocks free at the end (%v)", gst.Bfree, got)
			case !tc.reserved && (last.errno != syscall.ENOSPC || gst.Bavail != 0 || got[len(got)-3].errno != syscall.ENOSPC):
				t.Errorf("an unprivileged caller at the reserve: %v, f_bavail %d; want ENOSPC for the write and the setxattr, and 0", got, gst.Bavail)
			}
			if err := p.Unmount("/mnt", 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}
