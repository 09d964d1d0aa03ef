package iovfs_test

// Differential test of extended attributes on tmpfs: random set, get,
// list and remove calls through the path, l- and f- forms, on a regular
// file, a directory and a symlink, with names in every namespace (and bad
// ones), values from empty to past XATTR_SIZE_MAX and every flag, on a host
// tmpfs and an iovfs tmpfs mounted with the same nr_inodes, so that the
// inode space that tmpfs charges xattrs against runs out. Errnos, values,
// listings and statfs's f_ffree are compared after every call.

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

func TestXattrDifferential(t *testing.T) {
	testenv.RequireRoot(t, "mounting a host tmpfs with nr_inodes")
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	checks := 300
	if testenv.Quick() || raceEnabled {
		checks = 60
	}
	old := flag.Lookup("rapid.checks").Value.String()
	flag.Set("rapid.checks", fmt.Sprint(checks))
	defer flag.Set("rapid.checks", old)

	names := []string{"user.a", "user.b", "trusted.t", "security.s", "user.a", "user.long" + strings.Repeat("x", 200),
		"user.", "foo.x", "", "user." + strings.Repeat("n", 251), "system.x", "trusted."}
	seq, compared, successes := 0, 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		seq++
		hroot, err := os.MkdirTemp("", "xattr")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(hroot)
		if err := unix.Mount("tmpfs", hroot, "tmpfs", 0, "size=1m,nr_inodes=8"); err != nil {
			rt.Fatal(err)
		}
		defer unix.Unmount(hroot, unix.MNT_DETACH)
		vroot := fmt.Sprintf("/mnt/x%d", seq)
		if err := p.Mkdir(vroot, 0o755); err != nil {
			rt.Fatal(err)
		}
		if err := p.Mount("tmpfs", vroot, "tmpfs", 0, "size=1m,nr_inodes=8"); err != nil {
			rt.Fatal(err)
		}
		defer p.Unmount(vroot, unix.MNT_DETACH)
		// f, d, l -> f
		os.WriteFile(hroot+"/f", []byte("x"), 0o644)
		os.Mkdir(hroot+"/d", 0o755)
		os.Symlink("f", hroot+"/l")
		fd, _ := p.Open(vroot+"/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
		p.Write(fd, []byte("x"))
		p.Close(fd)
		p.Mkdir(vroot+"/d", 0o755)
		p.Symlink("f", vroot+"/l")
		type fdp struct{ h, v int }
		var fds []fdp
		for _, c := range []struct {
			rel   string
			flags int
		}{{"/f", unix.O_RDWR}, {"/f", unix.O_RDONLY}, {"/d", unix.O_RDONLY}, {"/f", unix.O_PATH}} {
			h, herr := unix.Open(hroot+c.rel, c.flags|unix.O_CLOEXEC, 0)
			v, verr := p.Open(vroot+c.rel, c.flags, 0)
			if herr != nil || verr != nil {
				rt.Fatalf("open %s: %v, %v", c.rel, herr, verr)
			}
			fds = append(fds, fdp{h, v})
		}
		// A descriptor that is not open: the name, flags and size checks
		// come before EBADF (Linux 6.13+'s path_setxattrat).
		fds = append(fds, fdp{1 << 20, 1 << 20})
		defer func() {
			for _, fd := range fds {
				unix.Close(fd.h)
				p.Close(fd.v)
			}
		}()
		rels := []string{"/f", "/d", "/l", "/missing"}
		buf := make([]byte, 70000)
		n := rapid.IntRange(1, 30).Draw(rt, "steps")
		for k := 0; k < n; k++ {
			name := rapid.SampledFrom(names).Draw(rt, "name")
			rel := rapid.SampledFrom(rels).Draw(rt, "path")
			fdi := rapid.IntRange(0, len(fds)-1).Draw(rt, "fd")
			form := rapid.SampledFrom([]string{"", "l", "f"}).Draw(rt, "form")
			hp, vp := hroot+rel, vroot+rel
			var what string
			var herr, verr error
			var hval, vval []byte
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op < 5:
				size := rapid.SampledFrom([]int{5, 0, 100, 3000, 1000, 65536, 65537}).Draw(rt, "size")
				data := bytes.Repeat([]byte{byte('a' + k%26)}, size)
				flags := rapid.SampledFrom([]int{0, 0, unix.XATTR_CREATE, unix.XATTR_REPLACE, unix.XATTR_CREATE | unix.XATTR_REPLACE, 4}).Draw(rt, "flags")
				what = fmt.Sprintf("%ssetxattr(%s, %.20q, %d bytes, %d)", form, rel, name, size, flags)
				switch form {
				case "":
					herr, verr = unix.Setxattr(hp, name, data, flags), p.Setxattr(vp, name, data, flags)
				case "l":
					herr, verr = unix.Lsetxattr(hp, name, data, flags), p.Lsetxattr(vp, name, data, flags)
				case "f":
					what = fmt.Sprintf("fsetxattr(fd %d, %.20q, %d bytes, %d)", fdi, name, size, flags)
					herr, verr = unix.Fsetxattr(fds[fdi].h, name, data, flags), p.Fsetxattr(fds[fdi].v, name, data, flags)
				}
			case op < 7:
				what = fmt.Sprintf("%sgetxattr(%s, %.20q)", form, rel, name)
				var hn int
				switch form {
				case "":
					hn, herr = unix.Getxattr(hp, name, buf)
					vval, verr = p.Getxattr(vp, name)
				case "l":
					hn, herr = unix.Lgetxattr(hp, name, buf)
					vval, verr = p.Lgetxattr(vp, name)
				case "f":
					what = fmt.Sprintf("fgetxattr(fd %d, %.20q)", fdi, name)
					hn, herr = unix.Fgetxattr(fds[fdi].h, name, buf)
					vval, verr = p.Fgetxattr(fds[fdi].v, name)
				}
				if herr == nil {
					hval = buf[:hn]
				}
			case op < 8:
				what = fmt.Sprintf("%slistxattr(%s)", form, rel)
				var hn int
				var vl []string
				switch form {
				case "":
					hn, herr = unix.Listxattr(hp, buf)
					vl, verr = p.Listxattr(vp)
				case "l":
					hn, herr = unix.Llistxattr(hp, buf)
					vl, verr = p.Llistxattr(vp)
				case "f":
					what = fmt.Sprintf("flistxattr(fd %d)", fdi)
					hn, herr = unix.Flistxattr(fds[fdi].h, buf)
					vl, verr = p.Flistxattr(fds[fdi].v)
				}
				if herr == nil {
					hval = buf[:hn]
					for _, s := range vl {
						vval = append(append(vval, s...), 0)
					}
				}
			default:
				what = fmt.Sprintf("%sremovexattr(%s, %.20q)", form, rel, name)
				switch form {
				case "":
					herr, verr = unix.Removexattr(hp, name), p.Removexattr(vp, name)
				case "l":
					herr, verr = unix.Lremovexattr(hp, name), p.Lremovexattr(vp, name)
				case "f":
					what = fmt.Sprintf("fremovexattr(fd %d, %.20q)", fdi, name)
					herr, verr = unix.Fremovexattr(fds[fdi].h, name), p.Fremovexattr(fds[fdi].v, name)
				}
			}
			compared++
			if errnoOf(herr) != errnoOf(verr) {
				rt.Fatalf("%s: host %v, iovfs %v", what, herr, verr)
			}
			if herr == nil {
				successes++
				if !bytes.Equal(hval, vval) {
					rt.Fatalf("%s: host %.60q, iovfs %.60q", what, hval, vval)
				}
			}
			var hs unix.Statfs_t
			unix.Statfs(hroot, &hs)
			vs, _ := p.Statfs(vroot)
			compared++
			if hs.Ffree != vs.Ffree {
				rt.Fatalf("after %s: f_ffree host %d, iovfs %d", what, hs.Ffree, vs.Ffree)
			}
		}
		// Inode space comes back when the inodes go: an unlinked f stays
		// while any descriptor holds it, the O_PATH one (fds[3]) last.
		ffree := func(what string) {
			var hs unix.Statfs_t
			unix.Statfs(hroot, &hs)
			vs, _ := p.Statfs(vroot)
			compared++
			if hs.Ffree != vs.Ffree {
				rt.Fatalf("%s: f_ffree host %d, iovfs %d", what, hs.Ffree, vs.Ffree)
			}
		}
		os.Remove(hroot + "/f")
		p.Unlink(vroot + "/f")
		ffree("after unlinking f")
		for _, i := range []int{0, 1, 3} {
			unix.Close(fds[i].h)
			p.Close(fds[i].v)
			ffree(fmt.Sprintf("after closing fd %d of the unlinked f", i))
		}
		fds = fds[2:3]
	})
	t.Logf("%d sequences, %d results compared (%d successful calls), 0 divergences", seq, compared, successes)
}
