package iovfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// hostProtection reads the host's fs.protected_* settings.
func hostProtection(t *testing.T) vfs.LinkProtection {
	t.Helper()
	h, err := vfs.OpenHostLinkProtection()
	if err != nil {
		t.Fatalf("reading the host's fs.protected_* settings: %v", err)
	}
	defer h.Close()
	return h.Read()
}

// setHostProtection writes the host's fs.protected_* settings.
func setHostProtection(t *testing.T, lp vfs.LinkProtection) {
	t.Helper()
	for name, v := range map[string]int{"symlinks": lp.Symlinks, "hardlinks": lp.Hardlinks, "fifos": lp.FIFOs, "regular": lp.Regular} {
		if err := os.WriteFile("/proc/sys/fs/protected_"+name, []byte(strconv.Itoa(v)), 0); err != nil {
			t.Fatalf("setting fs.protected_%s: %v", name, err)
		}
	}
}

// protectEntry is a file of the planted tree: its type and mode, and its
// owner.
type protectEntry struct {
	name string
	mode uint32
	uid  int
}

var (
	protectDirs = []protectEntry{
		{"w", unix.S_IFDIR | 0o1777, 0},    // sticky, world-writable
		{"g", unix.S_IFDIR | 0o1770, 0},    // sticky, group-writable (group 1001, the caller's)
		{"o", unix.S_IFDIR | 0o777, 0},     // not sticky
		{"x", unix.S_IFDIR | 0o1777, 2000}, // sticky, world-writable, owned by another user
	}
	protectFiles = []protectEntry{
		{"r0", unix.S_IFREG | 0o666, 0},
		{"r1", unix.S_IFREG | 0o666, credUid},
		{"r2", unix.S_IFREG | 0o666, 2000},
		{"p2", unix.S_IFREG | 0o600, 2000},
		{"su", unix.S_IFREG | 0o4666, 2000},
		{"sg", unix.S_IFREG | 0o2676, 2000},
		{"f0", unix.S_IFIFO | 0o666, 0},
		{"f1", unix.S_IFIFO | 0o666, credUid},
		{"f2", unix.S_IFIFO | 0o666, 2000},
		{"s2", unix.S_IFSOCK | 0o666, 2000},
		{"l0", unix.S_IFLNK, 0},
		{"l1", unix.S_IFLNK, credUid},
		{"l2", unix.S_IFLNK, 2000},
	}
)

// plantProtectTree makes the tree under dir with mk, which makes one
// entry (a symlink's target is "r0"), and chown, which sets its owner
// without following a symlink.
func plantProtectTree(t *testing.T, dir string, mk func(path string, mode uint32) error, chown func(path string, uid, gid int) error) {
	t.Helper()
	must(t, mk(dir, unix.S_IFDIR|0o755))
	must(t, mk(dir+"/d", unix.S_IFDIR|0o777))
	for _, d := range protectDirs {
		p := dir + "/" + d.name
		must(t, mk(p, d.mode))
		must(t, chown(p, d.uid, 1001))
		for _, f := range protectFiles {
			must(t, mk(p+"/"+f.name, f.mode))
			must(t, chown(p+"/"+f.name, f.uid, 2000))
		}
	}
}

// TestLinkProtectionKernel compares the fs.protected_* rules (following a
// trailing symlink, linking, and O_CREAT opens of existing files in
// sticky directories) with the host kernel's. With
// IOVFS_PROTECTED_SYSCTLS=1 it does so under every combination of the four
// settings, which it sets on the host for the test's duration and restores
// after; those sysctls are global, and other tests comparing with the
// kernel at the same time would see them change, so by default it uses
// the host's settings as they are. Callers are uid 1000 (groups 1001,
// 1002) and root.
func TestLinkProtectionKernel(t *testing.T) {
	testenv.RequireRoot(t, "running the host side as uid 1000")
	saved := hostProtection(t)
	all := os.Getenv("IOVFS_PROTECTED_SYSCTLS") == "1"
	if all {
		t.Cleanup(func() { setHostProtection(t, saved) })
	}

	host := hostTmpfs(t)
	must(t, os.Chmod(filepath.Dir(host), 0o755))
	hostDir := host + "/pt"
	plantProtectTree(t, hostDir, func(p string, mode uint32) error {
		switch mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if err := unix.Mkdir(p, 0); err != nil {
				return err
			}
			return unix.Chmod(p, mode&0o7777)
		case unix.S_IFLNK:
			return unix.Symlink("r0", p)
		}
		if err := unix.Mknod(p, mode, 0); err != nil {
			return err
		}
		return unix.Chmod(p, mode&0o7777)
	}, func(p string, uid, gid int) error { return unix.Lchown(p, uid, gid) })

	root, err := iovfs.New()
	must(t, err)
	ovDir := "/tmp/pt"
	plantProtectTree(t, ovDir, func(p string, mode uint32) error {
		switch mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if err := root.Mkdir(p, 0); err != nil {
				return err
			}
			return root.Chmod(p, mode&0o7777)
		case unix.S_IFLNK:
			return root.Symlink("r0", p)
		}
		if err := root.Mknod(p, mode, 0); err != nil {
			return err
		}
		return root.Chmod(p, mode&0o7777)
	}, func(p string, uid, gid int) error { return root.Lchown(p, uint32(uid), uint32(gid)) })
	must(t, root.Chmod("/tmp", 0o755))

	user := vfs.NewProcCred(root.Namespace(), credUid, credGid, credGroups...)
	su, err := root.Fork()
	must(t, err)
	callers := []struct {
		name  string
		host  *credChild
		ours  ovfsCred
		links bool
	}{
		{"uid 1000", startCredChild(t, false), ovfsCred{user}, true},
		{"root", startCredChild(t, true), ovfsCred{su}, false},
	}

	var steps, denied, compared int
	combo := 0
	for sym := 0; sym <= 1; sym++ {
		for hard := 0; hard <= 1; hard++ {
			for fifo := 0; fifo <= 2; fifo++ {
				for reg := 0; reg <= 2; reg++ {
					lp := vfs.LinkProtection{Symlinks: sym, Hardlinks: hard, FIFOs: fifo, Regular: reg}
					if !all && lp != saved {
						continue
					}
					if all {
						setHostProtection(t, lp)
					}
					must(t, root.Namespace().SetLinkProtection(lp))
					combo++
					for _, c := range callers {
						for _, d := range protectDirs {
							for _, f := range protectFiles {
								p := d.name + "/" + f.name
								ss := []credStep{
									{Op: "open", A: p, Flags: unix.O_CREAT | unix.O_RDWR, Mode: 0o644},
									{Op: "open", A: p, Flags: unix.O_CREAT | unix.O_RDONLY, Mode: 0o644},
									{Op: "open", A: p, Flags: unix.O_RDONLY},
									{Op: "stat", A: p},
								}
								if c.links {
									link := fmt.Sprintf("d/%d-%s-%s", combo, d.name, f.name)
									ss = append(ss, credStep{Op: "link", A: p, B: link},
										credStep{Op: "link", A: p, B: link + "-f", Flags: unix.AT_SYMLINK_FOLLOW})
								}
								for _, s := range ss {
									want := c.host.run(t, hostDir, s)
									got := runCredStep(c.ours, ovDir, s)
									steps++
									if want.Errno == int(unix.EACCES) || want.Errno == int(unix.EPERM) {
										denied++
									}
									if s.Op == "stat" {
										want.Out, got.Out = "", ""
									}
									if got != want {
										t.Errorf("%+v, %s: %s %s %#x: iovfs %+v, kernel %+v", lp, c.name, s.Op, s.A, s.Flags, got, want)
									}
									compared++
								}
							}
						}
					}
				}
			}
		}
	}
	if compared != steps || denied == 0 {
		t.Fatalf("%d steps, %d compared, %d denied by the kernel", steps, compared, denied)
	}
	t.Logf("%d settings, %d calls compared, %d refused by the kernel with EACCES or EPERM", combo, steps, denied)
}
