package ext4_test

// POSIX ACLs against the kernel's ext4: the ACL differential
// (internal/acldiff) on an image loop-mounted read-write by the kernel
// and the same image mounted read-write by iovfs; then the image iovfs
// wrote is checked by e2fsck, mounted by the kernel (every node's mode,
// owner and ACL xattrs as on the kernel's own image) and mounted
// read-only by iovfs (the same, and every caller's access decisions); and
// the acl and noacl mount options.

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs/internal/acldiff"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestACLHelper is a caller's child process; run by itself it does
// nothing.
func TestACLHelper(t *testing.T) { acldiff.Helper(t) }

// aclImage is an empty ext4 image with room for the differential's
// nodes; mke2fs sets acl in its default mount options.
func aclImage(t *testing.T) string {
	return mkImage(t, 16384, func(testing.TB, string) {}, "-t", "ext4", "-N", "8192")
}

// searchable lets the callers reach dir: its parent is a test's
// temporary directory, which only root may enter.
func searchable(t *testing.T, dir string) {
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
}

// twinMounts mounts img read-write twice: by the kernel, on a loop device
// over a copy (kmnt, unmounted at cleanup), and by iovfs at /mnt from a
// RAM disk holding it (p). size is the image's size.
func twinMounts(t *testing.T, img string) (p *vfs.Proc, kmnt string, size int) {
	t.Helper()
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	kimg := filepath.Join(t.TempDir(), "k.img")
	if err := os.WriteFile(kimg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	kmnt, _, err = hostLoopMount(t, kimg, false, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	p, dev, done := newProc(t, img, viaRAM)
	err = p.Mount(dev, "/mnt", "ext4", 0, "")
	done()
	if err != nil {
		t.Fatal(err)
	}
	return p, kmnt, len(b)
}

// writtenImage unmounts iovfs's /mnt of twinMounts, checks what it wrote
// with e2fsck -fn and returns it as an image file.
func writtenImage(t *testing.T, p *vfs.Proc, size int) string {
	t.Helper()
	if err := p.Unmount("/mnt", 0); err != nil {
		t.Fatal(err)
	}
	b := ramBytes(t, p, size)
	e2fsckN(t, b)
	img := filepath.Join(t.TempDir(), "ours.img")
	if err := os.WriteFile(img, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return img
}

func TestACLKernel(t *testing.T) {
	testenv.RequireRoot(t, "kernel loop mounts, and callers run as other users")
	cases := 150
	if testenv.Long() {
		cases = 1500
	}
	p, kmnt, size := twinMounts(t, aclImage(t))
	searchable(t, kmnt)
	if err := os.Mkdir(filepath.Join(kmnt, "acl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/mnt/acl", 0o755); err != nil {
		t.Fatal(err)
	}
	n := acldiff.Run(t, acldiff.Config{HostDir: filepath.Join(kmnt, "acl"), Dir: "/mnt/acl", Root: p, HelperTest: "TestACLHelper", Cases: cases, Seed: 47})
	t.Logf("read-write: %d results compared (%d accesses allowed), %d nodes with an access ACL", n.Compared, n.Allowed, n.WithACL)
	if t.Failed() {
		return
	}

	// The image iovfs wrote: clean, and the kernel reads the ACLs iovfs
	// stored.
	oimg := writtenImage(t, p, size)
	omnt := kernelMount(t, oimg)
	searchable(t, omnt)
	compared := 0
	for _, name := range n.Nodes {
		compared++
		if k, o := acldiff.HostState(filepath.Join(kmnt, "acl", name)), acldiff.HostState(filepath.Join(omnt, "acl", name)); k != o {
			t.Errorf("%s: kernel's image %s, iovfs's image under the kernel %s", name, k, o)
		}
	}

	// The same image read-only in iovfs: the same ACLs and decisions.
	ro := mountImage(t, oimg, viaRAM, "")
	exe := acldiff.HelperCopy(t)
	procs := make([]*vfs.Proc, len(acldiff.Callers))
	children := make([]*acldiff.Child, len(acldiff.Callers))
	for i, id := range acldiff.Callers {
		procs[i] = ro
		if id.Uid != 0 {
			procs[i] = vfs.NewProcCred(ro.Namespace(), id.Uid, id.Gid, id.Groups...)
			children[i] = acldiff.StartChild(t, exe, "TestACLHelper", id)
		}
	}
	for _, name := range n.Nodes {
		hp, op := filepath.Join(omnt, "acl", name), path.Join("/mnt/acl", name)
		compared++
		if h, o := acldiff.HostState(hp), acldiff.OurState(ro, op); h != o {
			t.Errorf("%s read-only: kernel %s, iovfs %s", name, h, o)
		}
		for i := range acldiff.Callers {
			for _, m := range []uint32{unix.R_OK, unix.W_OK, unix.X_OK, unix.R_OK | unix.X_OK} {
				r := acldiff.Req{Op: "access", Path: hp, Mode: m}
				var h acldiff.Res
				if children[i] == nil {
					h = acldiff.HostStep(r)
				} else {
					h = children[i].Run(t, r)
				}
				r.Path = op
				o := acldiff.OurStep(procs[i], r)
				compared++
				if h != o {
					t.Errorf("%s read-only: caller %v access %d: kernel %v, iovfs %v", name, acldiff.Callers[i], m, h, o)
				}
			}
		}
	}
	t.Logf("image written by iovfs: e2fsck clean, %d results compared on kernel and iovfs read-only mounts", compared)
}

// TestACLMountOptions compares the acl and noacl options with the
// kernel's, on an image whose superblock has acl in its default mount
// options and on one without (tune2fs -o ^acl): the mount's errno, then
// ACL xattr calls, a permission decision only the ACL grants, and (read-
// write) a file made under a default ACL.
func TestACLMountOptions(t *testing.T) {
	testenv.RequireRoot(t, "kernel loop mounts")
	testenv.RequireTool(t, "tune2fs")
	img := aclImage(t)
	// The file f (mode 0600, owner 1000) has an ACL that lets user 2000
	// read; d has a default ACL.
	kmnt, umount, err := hostLoopMount(t, img, false, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	acl := vfs.ACL{Entries: []vfs.ACLEntry{{Tag: vfs.ACLUserObj, Perm: 6}, {Tag: vfs.ACLUser, Perm: 4, ID: 2000}, {Tag: vfs.ACLGroupObj}, {Tag: vfs.ACLMask, Perm: 4}, {Tag: vfs.ACLOther}}}
	f, d := filepath.Join(kmnt, "f"), filepath.Join(kmnt, "d")
	os.WriteFile(f, []byte("x"), 0o600)
	os.Chown(f, 1000, 1000)
	os.Mkdir(d, 0o755)
	if err := unix.Setxattr(f, vfs.XattrACLAccess, acl.Xattr(), 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(d, vfs.XattrACLDefault, acl.Xattr(), 0); err != nil {
		t.Fatal(err)
	}
	umount()
	noDefault := filepath.Join(t.TempDir(), "nodef.img")
	b, _ := os.ReadFile(img)
	os.WriteFile(noDefault, b, 0o600)
	if out, err := exec.Command("tune2fs", "-o", "^acl", noDefault).CombinedOutput(); err != nil {
		t.Fatalf("tune2fs: %v\n%s", err, out)
	}
	exe := acldiff.HelperCopy(t)
	compared := 0
	for _, im := range []string{img, noDefault} {
		for _, opts := range []string{"", "acl", "noacl", "user_xattr,acl"} {
			for _, rdonly := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s,%q,ro=%v", filepath.Base(im), opts, rdonly), func(t *testing.T) {
					aclMountCase(t, exe, im, opts, rdonly, acl, &compared)
				})
			}
		}
	}
	t.Logf("%d results compared", compared)
}

// aclMountCase is one mount of TestACLMountOptions.
func aclMountCase(t *testing.T, exe, img, opts string, rdonly bool, acl vfs.ACL, compared *int) {
	var flags uintptr
	if rdonly {
		flags = unix.MS_RDONLY
	}
	kimg := filepath.Join(t.TempDir(), "k.img")
	b, _ := os.ReadFile(img)
	os.WriteFile(kimg, b, 0o600)
	km, _, kerr := hostLoopMount(t, kimg, rdonly, flags, opts)
	p, dev, done := newProc(t, img, viaRAM)
	oerr := p.Mount(dev, "/mnt", "ext4", flags, opts)
	done()
	if oerr == nil {
		defer p.Unmount("/mnt", 0)
	}
	*compared++
	if acldiff.ErrnoOf(kerr) != acldiff.ErrnoOf(oerr) {
		t.Fatalf("mount -o %q: kernel %v, iovfs %v", opts, kerr, oerr)
	}
	if kerr != nil {
		return
	}
	steps := []struct {
		what string
		k, o func() string
	}{
		{"getxattr access", func() string {
			n, err := unix.Getxattr(filepath.Join(km, "f"), vfs.XattrACLAccess, b[:256])
			return fmt.Sprintf("%x %v", b[:max(n, 0)], acldiff.ErrnoOf(err))
		}, func() string {
			v, err := p.Getxattr("/mnt/f", vfs.XattrACLAccess)
			return fmt.Sprintf("%x %v", v, acldiff.ErrnoOf(err))
		}},
		{"getxattr default", func() string {
			n, err := unix.Getxattr(filepath.Join(km, "d"), vfs.XattrACLDefault, b[:256])
			return fmt.Sprintf("%x %v", b[:max(n, 0)], acldiff.ErrnoOf(err))
		}, func() string {
			v, err := p.Getxattr("/mnt/d", vfs.XattrACLDefault)
			return fmt.Sprintf("%x %v", v, acldiff.ErrnoOf(err))
		}},
		{"listxattr", func() string {
			n, err := unix.Listxattr(filepath.Join(km, "f"), b[:256])
			return fmt.Sprintf("%q %v", b[:max(n, 0)], acldiff.ErrnoOf(err))
		}, func() string {
			l, err := p.Listxattr("/mnt/f")
			s := ""
			for _, x := range l {
				s += x + "\x00"
			}
			return fmt.Sprintf("%q %v", s, acldiff.ErrnoOf(err))
		}},
		{"setxattr access", func() string {
			return acldiff.ErrnoOf(unix.Setxattr(filepath.Join(km, "f"), vfs.XattrACLAccess, acl.Xattr(), 0)).Error()
		}, func() string {
			return acldiff.ErrnoOf(p.Setxattr("/mnt/f", vfs.XattrACLAccess, acl.Xattr(), 0)).Error()
		}},
	}
	for _, s := range steps {
		*compared++
		if k, o := s.k(), s.o(); k != o {
			t.Errorf("%s: kernel %s, iovfs %s", s.what, k, o)
		}
	}
	// User 2000 reads f only through the ACL.
	searchable(t, km)
	c := acldiff.StartChild(t, exe, "TestACLHelper", acldiff.Identity{Uid: 2000, Gid: 2000})
	u := vfs.NewProcCred(p.Namespace(), 2000, 2000)
	h := c.Run(t, acldiff.Req{Op: "access", Path: filepath.Join(km, "f"), Mode: unix.R_OK})
	o := acldiff.OurStep(u, acldiff.Req{Op: "access", Path: "/mnt/f", Mode: unix.R_OK})
	*compared++
	if h != o {
		t.Errorf("user 2000 reads f: kernel %v, iovfs %v", h, o)
	}
	if !rdonly {
		// A file made in d inherits its default ACL.
		r := acldiff.Req{Op: "create", Path: filepath.Join(km, "d", "n"), Mode: 0o666, Umask: 0o022}
		acldiff.HostStep(r)
		r.Path = "/mnt/d/n"
		acldiff.OurStep(p, r)
		*compared++
		if k, o := acldiff.HostState(filepath.Join(km, "d", "n")), acldiff.OurState(p, "/mnt/d/n"); k != o {
			t.Errorf("a file made in d: kernel %s, iovfs %s", k, o)
		}
	}
}
