package overlay_test

// The kernel differential: random sequences of namespace and data calls
// on the host kernel's overlayfs and on iovfs's, over the same starting
// trees (two lower layers and an upper one on a host tmpfs; iovfs reaches
// its copy through hostfs), compared errno for errno after every call,
// merged tree for merged tree, and upper directory for upper directory
// in the kernel's format (whiteouts, opaque directories, copied-up
// objects). At the end of each sequence each overlay is unmounted and
// each upper directory mounted by the other implementation, which must
// show the same merged tree.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fs/tmpfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// diffRoot mounts a private tmpfs for one sequence's trees.
func diffRoot(t *testing.T) string {
	t.Helper()
	testenv.RequireRoot(t, "mounts tmpfs and overlayfs")
	dir := t.TempDir()
	// Searchable by the calls made as uid 1000.
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m,mode=755"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// populate makes the two lower layers of the starting tree at l1 (upper)
// and l2 on the host: merged directories, a whiteout, an opaque
// directory, hard links, symlinks, a FIFO, extended attributes, files of
// uid 1000, every time set before oldTime.
func populate(t *testing.T, l1, l2 string) {
	t.Helper()
	when := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	type obj struct {
		path string
		kind byte // d, f, l (symlink), h (hard link), p (fifo), w (whiteout)
		mode uint32
		uid  int
		data string
		x    []string // name=value
	}
	layers := map[string][]obj{
		l2: {
			{"a", 'd', 0o755, 0, "", nil},
			{"a/f", 'f', 0o644, 1000, "a-f of l2\n", []string{"user.x=1"}},
			{"a/g", 'f', 0o600, 0, "a-g", nil},
			{"a/b", 'd', 0o755, 0, "", nil},
			{"a/b/f", 'f', 0o644, 0, "abf", nil},
			{"a/b/g", 'f', 0o644, 0, strings.Repeat("abg", 3000), nil},
			{"c", 'd', 0o777, 1000, "", nil},
			{"c/h", 'f', 0o666, 1000, "ch", nil},
			{"c/x", 'h', 0, 0, "c/h", nil},
			{"e", 'd', 0o755, 0, "", nil},
			{"e/f", 'f', 0o644, 0, "ef", nil},
			{"e/g", 'f', 0o644, 0, "eg", nil},
			{"d", 'd', 0o755, 0, "", nil},
			{"d/g", 'f', 0o644, 0, "l2 d/g", nil},
			{"g", 'f', 0o644, 0, "root g", nil},
			{"h", 'f', 0o4755, 0, "root h", []string{"trusted.t=2"}},
		},
		l1: {
			{"a", 'd', 0o755, 0, "", nil},
			{"a/h", 'f', 0o644, 0, "a-h of l1", nil},
			{"a/b", 'd', 0o755, 0, "", nil},
			{"a/b/h", 'f', 0o640, 1000, "abh", nil},
			{"a/x", 'l', 0, 0, "f", nil},
			{"d", 'd', 0o777, 1000, "", []string{"user.d=1"}},
			{"d/f", 'f', 0o644, 1000, "df", nil},
			{"d/p", 'p', 0o644, 0, "", nil},
			{"e", 'd', 0o755, 0, "", []string{"trusted.overlay.opaque=y"}},
			{"e/h", 'f', 0o644, 0, "eh", nil},
			{"g", 'w', 0, 0, "", nil},
			{"f", 'f', 0o644, 0, "root f", []string{"user.y=2", "trusted.t=3"}},
			{"x", 'l', 0, 0, "a/f", nil},
			{"w", 'd', 0o755, 0, "", nil},
			{"w/f", 'f', 0o600, 1000, "wf", nil},
		},
	}
	for _, root := range []string{l2, l1} {
		var dirs []string
		for i, o := range layers[root] {
			p := filepath.Join(root, o.path)
			var err error
			switch o.kind {
			case 'd':
				err = os.Mkdir(p, 0)
				dirs = append(dirs, p)
			case 'f':
				err = os.WriteFile(p, []byte(o.data), 0)
			case 'l':
				err = os.Symlink(o.data, p)
			case 'h':
				err = os.Link(filepath.Join(root, o.data), p)
			case 'p':
				err = unix.Mknod(p, unix.S_IFIFO, 0)
			case 'w':
				err = unix.Mknod(p, unix.S_IFCHR, 0)
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.kind == 'h' {
				continue
			}
			if err := os.Lchown(p, o.uid, o.uid); err != nil {
				t.Fatal(err)
			}
			if o.kind != 'l' && o.kind != 'w' {
				if err := os.Chmod(p, os.FileMode(o.mode&0o777)|modeBits(o.mode)); err != nil {
					t.Fatal(err)
				}
			}
			for _, x := range o.x {
				k, v, _ := strings.Cut(x, "=")
				if err := unix.Lsetxattr(p, k, []byte(v), 0); err != nil {
					t.Fatal(err)
				}
			}
			_ = i
		}
		// Times last, the deepest first, so that no later change moves one.
		objs := layers[root]
		for i := len(objs) - 1; i >= 0; i-- {
			p := filepath.Join(root, objs[i].path)
			ts := when.Add(time.Duration(i) * time.Hour)
			tv := []unix.Timespec{unix.NsecToTimespec(ts.UnixNano()), unix.NsecToTimespec(ts.UnixNano())}
			if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, tv, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				t.Fatal(err)
			}
		}
		_ = dirs
	}
}

func modeBits(m uint32) os.FileMode {
	var fm os.FileMode
	if m&unix.S_ISUID != 0 {
		fm |= os.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		fm |= os.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

// The names the random calls use.
var (
	diffDirs  = []string{"", "a", "a/b", "c", "d", "e", "w", "n", "n/m"}
	diffNames = []string{"f", "g", "h", "x", "b", "n", "m", "p"}
	diffModes = []uint32{0o644, 0o600, 0o755, 0o666, 0o777, 0o2755, 0o4711, 0o700}
)

// call is one random call, run alike on each side: what it returns is
// its errno and whatever it read.
type call struct {
	desc string
	user bool
	run  func(s side) string
}

func randPath(r *rand.Rand) string {
	if r.IntN(8) == 0 {
		return diffDirs[1+r.IntN(len(diffDirs)-1)]
	}
	return path.Join(diffDirs[r.IntN(len(diffDirs))], diffNames[r.IntN(len(diffNames))])
}

func randData(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return b
}

func res(err error, more ...any) string {
	return fmt.Sprint(append([]any{errnoOf(err)}, more...)...)
}

// randCall makes a random call.
func randCall(r *rand.Rand) call {
	p, q := randPath(r), randPath(r)
	user := r.IntN(4) == 0
	const nb = unix.O_NONBLOCK
	switch r.IntN(19) {
	case 0, 1:
		flags := unix.O_CREAT | unix.O_WRONLY | nb
		if r.IntN(2) == 0 {
			flags |= unix.O_EXCL
		}
		if r.IntN(2) == 0 {
			flags |= unix.O_NOFOLLOW
		}
		mode := diffModes[r.IntN(len(diffModes))]
		data := randData(r, r.IntN(3000))
		return call{fmt.Sprintf("create %s %o %d bytes", p, mode, len(data)), user, func(s side) string {
			fd, err := s.open(p, flags, mode)
			if err != nil {
				return res(err)
			}
			n, err := s.write(fd, data)
			s.close(fd)
			return res(err, n)
		}}
	case 2:
		off := int64(r.IntN(5000))
		data := randData(r, 1+r.IntN(2000))
		return call{fmt.Sprintf("pwrite %s at %d", p, off), user, func(s side) string {
			fd, err := s.open(p, unix.O_WRONLY|unix.O_NOFOLLOW|nb, 0)
			if err != nil {
				return res(err)
			}
			n, err := s.pwrite(fd, data, off)
			s.close(fd)
			return res(err, n)
		}}
	case 3:
		data := randData(r, 1+r.IntN(500))
		return call{"append " + p, user, func(s side) string {
			fd, err := s.open(p, unix.O_WRONLY|unix.O_APPEND|nb, 0)
			if err != nil {
				return res(err)
			}
			n, err := s.write(fd, data)
			s.close(fd)
			return res(err, n)
		}}
	case 4:
		size := int64(r.IntN(12000))
		if r.IntN(3) == 0 {
			return call{"open O_TRUNC " + p, user, func(s side) string {
				fd, err := s.open(p, unix.O_WRONLY|unix.O_TRUNC|nb, 0)
				if err == nil {
					s.close(fd)
				}
				return res(err)
			}}
		}
		return call{fmt.Sprintf("truncate %s %d", p, size), user, func(s side) string { return res(s.truncate(p, size)) }}
	case 5:
		return call{"unlink " + p, user, func(s side) string { return res(s.unlink(p)) }}
	case 6:
		return call{"rmdir " + p, user, func(s side) string { return res(s.rmdir(p)) }}
	case 7, 8:
		flags := uint(0)
		switch r.IntN(6) {
		case 0:
			flags = unix.RENAME_NOREPLACE
		case 1:
			flags = unix.RENAME_EXCHANGE
		}
		return call{fmt.Sprintf("rename %s %s %d", p, q, flags), user, func(s side) string { return res(s.rename(p, q, flags)) }}
	case 9:
		return call{"link " + p + " " + q, user, func(s side) string { return res(s.link(p, q)) }}
	case 10:
		target := randPath(r)
		return call{"symlink " + target + " " + p, user, func(s side) string { return res(s.symlink(target, p)) }}
	case 11:
		mode := diffModes[r.IntN(len(diffModes))]
		return call{fmt.Sprintf("chmod %s %o", p, mode), user, func(s side) string { return res(s.chmod(p, mode)) }}
	case 12:
		ids := []int{0, 1000, 1001}
		uid, gid := ids[r.IntN(3)], ids[r.IntN(3)]
		return call{fmt.Sprintf("lchown %s %d %d", p, uid, gid), false, func(s side) string { return res(s.lchown(p, uid, gid)) }}
	case 13:
		when := time.Date(2005, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(1000)) * time.Hour)
		return call{fmt.Sprintf("utimes %s %v", p, when), user, func(s side) string { return res(s.utimes(p, when)) }}
	case 14:
		name := fmt.Sprintf("user.k%d", r.IntN(3))
		if !user && r.IntN(3) == 0 {
			name = "trusted.k"
		}
		v := randData(r, r.IntN(20))
		// hostfs, which iovfs's layers are on here, has no xattrs on
		// symlinks: it holds them as O_PATH descriptors, which the l*xattr
		// calls cannot name and Linux 6.13's *xattrat refuse. Such a call
		// is left out on both sides.
		symlink := func(s side) bool {
			st, err := s.lstat(p)
			return err == nil && st.mode&unix.S_IFMT == unix.S_IFLNK && strings.HasPrefix(name, "trusted.")
		}
		if r.IntN(4) == 0 {
			return call{"removexattr " + p + " " + name, user, func(s side) string {
				if symlink(s) {
					return "a symlink"
				}
				return res(s.lremovexattr(p, name))
			}}
		}
		return call{"setxattr " + p + " " + name, user, func(s side) string {
			if symlink(s) {
				return "a symlink"
			}
			return res(s.lsetxattr(p, name, v))
		}}
	case 15:
		mode := []uint32{0o755, 0o777, 0o700, 0o2775}[r.IntN(4)]
		return call{fmt.Sprintf("mkdir %s %o", p, mode), user, func(s side) string { return res(s.mkdir(p, mode)) }}
	case 16:
		if r.IntN(3) == 0 {
			return call{"mkfifo " + p, user, func(s side) string { return res(s.mkfifo(p)) }}
		}
		d := diffDirs[r.IntN(len(diffDirs))]
		return call{"readdir " + d, user, func(s side) string {
			names, err := s.readdir(d)
			if err != nil {
				return res(err)
			}
			sortStrings(names)
			return res(nil, names)
		}}
	case 17:
		return call{"read " + p, user, func(s side) string {
			fd, err := s.open(p, unix.O_RDONLY|nb, 0)
			if err != nil {
				return res(err)
			}
			defer s.close(fd)
			var all []byte
			buf := make([]byte, 4096)
			for {
				n, err := s.read(fd, buf)
				if err != nil {
					return res(err, len(all))
				}
				if n == 0 {
					return res(nil, string(all))
				}
				all = append(all, buf[:n]...)
			}
		}}
	default:
		return call{"lstat " + p, user, func(s side) string {
			st, err := s.lstat(p)
			if err != nil {
				return res(err)
			}
			return res(nil, fmt.Sprintf("%o %d:%d", st.mode, st.uid, st.gid))
		}}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// mergedXattrs are the attributes compared in merged trees: all that the
// overlays show.
func mergedXattrs(string) bool { return true }

// upperXattrs are those compared in upper directories: all but the
// kernel's origin file handles and the other bookkeeping iovfs does not
// write (impure, uuid).
func upperXattrs(n string) bool {
	return !strings.HasPrefix(n, "trusted.overlay.") || n == "trusted.overlay.opaque"
}

// hostProtection gives ns the host's fs.protected_* settings, which the
// kernel's side of a differential follows.
func hostProtection(t *testing.T, ns *vfs.Namespace) {
	t.Helper()
	h, err := vfs.OpenHostLinkProtection()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := ns.SetLinkProtection(h.Read()); err != nil {
		t.Fatal(err)
	}
}

// iovfsOverlay makes a namespace with the host directory dir mounted at
// /h through hostfs and an overlay at /m of the layers opts names under
// /h, and returns a root and a uid-1000 process on it.
func iovfsOverlay(t *testing.T, dir, opts string) (*vfs.Proc, *vfs.Proc) {
	t.Helper()
	ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))
	hostProtection(t, ns)
	p := vfs.NewProc(ns)
	for _, d := range []string{"/h", "/m"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Mount(dir, "/h", "hostfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("overlay", "/m", "overlay", 0, opts); err != nil {
		t.Fatalf("mount overlay %s: %v", opts, err)
	}
	return p, vfs.NewProcCred(ns, 1000, 1000, 1000)
}

func kernelOverlay(t *testing.T, mnt, opts string) {
	t.Helper()
	if err := unix.Mount("overlay", mnt, "overlay", 0, opts); err != nil {
		t.Fatalf("kernel mount overlay %s: %v", opts, err)
	}
}

func TestKernelDifferential(t *testing.T) {
	testenv.RequireRoot(t, "mounts tmpfs and overlayfs")
	seqs, calls := 8, 60
	switch {
	case testenv.Long():
		seqs, calls = 200, 150
	case raceOn:
		seqs, calls = 3, 40
	}
	total := 0
	for seed := 1; seed <= seqs; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			total += runSequence(t, uint64(seed), calls)
		})
	}
	t.Logf("%d sequences, %d calls, each compared with the kernel's", seqs, total)
}

// runSequence runs one random sequence and returns how many calls it made.
func runSequence(t *testing.T, seed uint64, calls int) int {
	root := diffRoot(t)
	k, i := filepath.Join(root, "k"), filepath.Join(root, "i")
	for _, side := range []string{k, i} {
		for _, d := range []string{"l1", "l2", "u", "w", "m"} {
			if err := os.MkdirAll(filepath.Join(side, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		populate(t, filepath.Join(side, "l1"), filepath.Join(side, "l2"))
	}
	kopts := func(s string) string {
		return fmt.Sprintf("lowerdir=%s/l1:%s/l2,upperdir=%s/u,workdir=%s/w", s, s, s, s)
	}
	kmnt := filepath.Join(k, "m")
	kernelOverlay(t, kmnt, kopts(k))
	kmounted := true
	defer func() {
		if kmounted {
			unix.Unmount(kmnt, unix.MNT_DETACH)
		}
	}()
	p, q := iovfsOverlay(t, root, kopts("/h/i"))
	kr, ku := host{root: kmnt}, host{root: kmnt, uid: 1000}
	ir, iu := ivs{p, "/m"}, ivs{q, "/m"}
	r := rand.New(rand.NewPCG(seed, 29))
	var history []string
	check := func(what string) {
		t.Helper()
		if d := diff(walk(t, kr, mergedXattrs), walk(t, ir, mergedXattrs), true); len(d) > 0 {
			t.Fatalf("%s: merged trees differ (kernel first):\n%s\ncalls:\n%s", what, strings.Join(d, "\n"), strings.Join(history, "\n"))
		}
		ku, iu := host{root: filepath.Join(k, "u")}, host{root: filepath.Join(i, "u")}
		if d := diff(walk(t, ku, upperXattrs), walk(t, iu, upperXattrs), true); len(d) > 0 {
			t.Fatalf("%s: upper directories differ (kernel first):\n%s\ncalls:\n%s", what, strings.Join(d, "\n"), strings.Join(history, "\n"))
		}
	}
	check("at the start")
	for n := 0; n < calls; n++ {
		c := randCall(r)
		ks, is := side(kr), side(ir)
		if c.user {
			ks, is = ku, iu
		}
		kres, ires := c.run(ks), c.run(is)
		who := "root"
		if c.user {
			who = "uid 1000"
		}
		history = append(history, fmt.Sprintf("%s as %s: %s", c.desc, who, kres))
		if kres != ires {
			t.Fatalf("%s as %s: kernel %s, iovfs %s\ncalls:\n%s", c.desc, who, kres, ires, strings.Join(history, "\n"))
		}
		check(c.desc)
	}
	// Each upper directory under the other implementation.
	kmerged, imerged := walk(t, kr, mergedXattrs), walk(t, ir, mergedXattrs)
	if err := unix.Unmount(kmnt, 0); err != nil {
		t.Fatal(err)
	}
	kmounted = false
	if err := p.Unmount("/m", 0); err != nil {
		t.Fatal(err)
	}
	kernelOverlay(t, kmnt, kopts(i))
	cross := walk(t, kr, mergedXattrs)
	if err := unix.Unmount(kmnt, 0); err != nil {
		t.Fatal(err)
	}
	if d := diff(imerged, cross, true); len(d) > 0 {
		t.Fatalf("the kernel shows iovfs's upper directory otherwise (iovfs first):\n%s\ncalls:\n%s", strings.Join(d, "\n"), strings.Join(history, "\n"))
	}
	if err := p.Mount("overlay", "/m", "overlay", 0, kopts("/h/k")); err != nil {
		t.Fatal(err)
	}
	cross = walk(t, ir, mergedXattrs)
	if d := diff(kmerged, cross, true); len(d) > 0 {
		t.Fatalf("iovfs shows the kernel's upper directory otherwise (kernel first):\n%s\ncalls:\n%s", strings.Join(d, "\n"), strings.Join(history, "\n"))
	}
	if err := p.Unmount("/m", 0); err != nil {
		t.Fatal(err)
	}
	return calls
}

// TestMountOptionsKernel mounts overlays with the same option strings on
// the kernel and on iovfs (layers l, l2, u, w, a file f, over one host
// tmpfs, through hostfs for iovfs) and compares the errnos.
func TestMountOptionsKernel(t *testing.T) {
	root := diffRoot(t)
	for _, d := range []string{"l", "l2", "u", "w", "u/w2", "m"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ns := vfs.NewNamespace(tmpfs.New(tmpfs.Options{Mode: 0o755, ModeSet: true}))
	hostProtection(t, ns)
	p := vfs.NewProc(ns)
	if err := p.Mkdir("/h", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount(root, "/h", "hostfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	if err := p.Chdir("/h"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir("/")
	for _, opts := range []string{
		"lowerdir=l",
		"lowerdir=l:l2",
		"lowerdir=l,upperdir=u",
		"lowerdir=l,upperdir=u,workdir=w",
		"lowerdir=l:l2,upperdir=u,workdir=w",
		"lowerdir=l,upperdir=u,workdir=u/w2",
		"lowerdir=l,upperdir=u,workdir=u",
		"lowerdir=nope,upperdir=u,workdir=w",
		"lowerdir=l,upperdir=nope,workdir=w",
		"lowerdir=f,upperdir=u,workdir=w",
		"lowerdir=l,upperdir=f,workdir=w",
		"lowerdir=l,upperdir=u,workdir=w,bogus",
		"upperdir=u,workdir=w",
		"lowerdir=l,workdir=w",
		"lowerdir=l,upperdir=l,workdir=w",
		"lowerdir=l,upperdir=u,workdir=w,redirect_dir=off,index=off,metacopy=off,xino=off",
		"lowerdir=nope",
		"lowerdir=f",
		"lowerdir=nope:l",
		"lowerdir=l:nope",
		"lowerdir=l,upperdir=nope",
		"lowerdir=l,workdir=nope",
		"lowerdir=l,upperdir=u,workdir=nope",
		"lowerdir=nope,bogus",
		"bogus,lowerdir=nope",
		"lowerdir=",
		"lowerdir=l,upperdir=",
		"",
		"lowerdir=u/w2,upperdir=u,workdir=w",
		"lowerdir=.,upperdir=u,workdir=w",
		"lowerdir=l:l",
		"lowerdir=l:l2:l",
		"lowerdir=l,upperdir=u,workdir=l",
		"lowerdir=l,upperdir=u/w2,workdir=w",
		"lowerdir=l:u,upperdir=u/w2,workdir=w",
		"lowerdir=l:m,upperdir=u,workdir=w",
	} {
		// Where layers overlap, a lookup that reaches another layer's
		// root or a work directory gives ELOOP (ovl_lookup_single's
		// trap); the listings name what they name.
		probe := func(sd side) string {
			var b strings.Builder
			for _, name := range []string{"", "f", "l", "l2", "u", "w", "w/work", "u/w2", "w2", "work", "m", "l/x"} {
				st, err := sd.lstat(name)
				fmt.Fprintf(&b, "%q: %v %o\n", name, errnoOf(err), st.mode&unix.S_IFMT)
			}
			names, err := sd.readdir("")
			slices.Sort(names)
			fmt.Fprintf(&b, "listing: %q %v\n", names, errnoOf(err))
			return b.String()
		}
		var kprobe, iprobe string
		kerr := unix.Mount("overlay", "m", "overlay", 0, opts)
		if kerr == nil {
			kprobe = probe(host{root: filepath.Join(root, "m")})
			unix.Unmount("m", 0)
		}
		ierr := p.Mount("overlay", "m", "overlay", 0, opts)
		if ierr == nil {
			iprobe = probe(ivs{p, "/h/m"})
			if err := p.Unmount("m", 0); err != nil {
				t.Fatal(err)
			}
		}
		if errnoOf(kerr) != errnoOf(ierr) {
			t.Errorf("%s: kernel %v, iovfs %v", opts, kerr, ierr)
		} else if testing.Verbose() && kprobe != "" {
			t.Logf("%s:\n%s", opts, kprobe)
		}
		if kprobe != iprobe {
			t.Errorf("%s: the kernel's lookups and listing, then iovfs's:\n%s\n%s", opts, kprobe, iprobe)
		}
	}
}
