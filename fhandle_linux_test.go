package iovfs_test

// The file-handle differential: name_to_handle_at and open_by_handle_at
// on a host tmpfs and on iovfs's tmpfs, through renames, links, unlinks
// (with the file still open and after its last close), rmdir, symlinks,
// corrupted handles and an unprivileged caller. Errnos and what the
// opened file holds are compared, never the handles' bytes (each file
// system has its own format).

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

type handleSys interface {
	nameToHandle(p string, flags int) (unix.FileHandle, error)
	openByHandle(h unix.FileHandle, flags int) (int, error)
	describe(fd int) string // what the open file is: type, size, first bytes or entries
	close(fd int)
	do(op string, a, b string) error
}

type hostHandles struct{ root int }

func (h hostHandles) nameToHandle(p string, flags int) (unix.FileHandle, error) {
	fh, _, err := unix.NameToHandleAt(unix.AT_FDCWD, p, flags)
	return fh, err
}
func (h hostHandles) openByHandle(fh unix.FileHandle, flags int) (int, error) {
	return unix.OpenByHandleAt(h.root, fh, flags|unix.O_CLOEXEC)
}
func (h hostHandles) describe(fd int) string {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Sprint(errnoOf(err))
	}
	b := make([]byte, 64)
	n, err := unix.Pread(fd, b, 0)
	if err != nil {
		n = 0
	}
	return fmt.Sprintf("%o nlink %d size %d %q %v", st.Mode, st.Nlink, st.Size, b[:max(n, 0)], errnoOf(err))
}
func (h hostHandles) close(fd int) { unix.Close(fd) }
func (h hostHandles) do(op, a, b string) error {
	switch op {
	case "rename":
		return unix.Rename(a, b)
	case "link":
		return unix.Link(a, b)
	case "unlink":
		return unix.Unlink(a)
	case "rmdir":
		return unix.Rmdir(a)
	}
	return unix.EINVAL
}

type ourHandles struct {
	p    *vfs.Proc
	root int
}

func (o ourHandles) nameToHandle(p string, flags int) (unix.FileHandle, error) {
	fh, _, err := o.p.NameToHandleAt(unix.AT_FDCWD, p, flags)
	return fh, err
}
func (o ourHandles) openByHandle(fh unix.FileHandle, flags int) (int, error) {
	return o.p.OpenByHandleAt(o.root, fh, flags|unix.O_CLOEXEC)
}
func (o ourHandles) describe(fd int) string {
	st, err := o.p.Fstat(fd)
	if err != nil {
		return fmt.Sprint(errnoOf(err))
	}
	b := make([]byte, 64)
	n, err := o.p.Pread(fd, b, 0)
	if err != nil {
		n = 0
	}
	return fmt.Sprintf("%o nlink %d size %d %q %v", st.Mode, st.Nlink, st.Size, b[:n], errnoOf(err))
}
func (o ourHandles) close(fd int) { o.p.Close(fd) }
func (o ourHandles) do(op, a, b string) error {
	switch op {
	case "rename":
		return o.p.Rename(a, b)
	case "link":
		return o.p.Link(a, b)
	case "unlink":
		return o.p.Unlink(a)
	case "rmdir":
		return o.p.Rmdir(a)
	}
	return unix.EINVAL
}

// TestFileHandleKernel compares file handles with a host tmpfs's.
func TestFileHandleKernel(t *testing.T) {
	testenv.RequireRoot(t, "open_by_handle_at needs CAP_DAC_READ_SEARCH")
	host := hostTmpfs(t)
	must(t, os.Chmod(filepath.Dir(host), 0o755))
	hroot, err := unix.Open(host, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(hroot)
	p, err := iovfs.New()
	must(t, err)
	must(t, p.Mkdir("/tmp/fh", 0o755))
	oroot, err := p.Open("/tmp/fh", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	hs, os2 := handleSys(hostHandles{hroot}), handleSys(ourHandles{p, oroot})
	hp := func(s string) string { return path.Join(host, s) }
	op := func(s string) string { return path.Join("/tmp/fh", s) }
	// The tree, on both.
	for _, f := range []struct{ name, data string }{{"a", "alpha"}, {"b", "beta"}, {"c", "gamma"}, {"d/e", "epsilon"}} {
		if dir := path.Dir(f.name); dir != "." {
			must(t, os.MkdirAll(hp(dir), 0o755))
			must(t, p.Mkdir(op(dir), 0o755))
		}
		must(t, os.WriteFile(hp(f.name), []byte(f.data), 0o644))
		createFile(t, p, op(f.name), f.data)
	}
	must(t, os.Symlink("a", hp("s")))
	must(t, p.Symlink("a", op("s")))
	must(t, os.Mkdir(hp("x"), 0o755))
	must(t, p.Mkdir(op("x"), 0o755))

	compared := 0
	cmp := func(what string, h, o any) {
		t.Helper()
		compared++
		if os.Getenv("FHDEBUG") != "" {
			t.Logf("%s: %v / %v", what, h, o)
		}
		if fmt.Sprint(h) != fmt.Sprint(o) {
			t.Errorf("%s:\n host %v\n ours %v", what, h, o)
		}
	}
	handles := map[string][2]unix.FileHandle{}
	get := func(name string, flags int) {
		t.Helper()
		hh, herr := hs.nameToHandle(hp(name), flags)
		oh, oerr := os2.nameToHandle(op(name), flags)
		cmp(fmt.Sprintf("name_to_handle_at(%s, %#x)", name, flags), errnoOf(herr), errnoOf(oerr))
		if herr == nil && oerr == nil {
			handles[name] = [2]unix.FileHandle{hh, oh}
			// The same type and size as Linux's tmpfs handles.
			cmp(fmt.Sprintf("handle of %s, %#x", name, flags),
				fmt.Sprintf("type %#x, %d bytes", hh.Type(), len(hh.Bytes())),
				fmt.Sprintf("type %#x, %d bytes", oh.Type(), len(oh.Bytes())))
		}
	}
	open := func(what, name string, flags int) {
		t.Helper()
		h := handles[name]
		hfd, herr := hs.openByHandle(h[0], flags)
		ofd, oerr := os2.openByHandle(h[1], flags)
		hd, od := fmt.Sprint(errnoOf(herr)), fmt.Sprint(errnoOf(oerr))
		if herr == nil {
			hd = hs.describe(hfd)
			hs.close(hfd)
		}
		if oerr == nil {
			od = os2.describe(ofd)
			os2.close(ofd)
		}
		cmp(fmt.Sprintf("%s: open_by_handle_at(%s, %#x)", what, name, flags), hd, od)
	}
	do := func(opn, a, b string) {
		t.Helper()
		cmp(fmt.Sprintf("%s %s %s", opn, a, b), errnoOf(hs.do(opn, hp(a), hp(b))), errnoOf(os2.do(opn, op(a), op(b))))
	}

	for _, n := range []string{"a", "b", "c", "d", "d/e", "x", "s", ""} {
		get(n, 0)
	}
	get("s", unix.AT_SYMLINK_FOLLOW)
	get("nonexistent", 0)
	get("a", 0x4000) // an unknown flag
	get("a", vfs.AT_HANDLE_CONNECTABLE|vfs.AT_HANDLE_FID)
	for _, n := range []string{"a", "d", "d/e", "x", ""} {
		for _, fl := range []int{unix.O_RDONLY, unix.O_PATH, unix.O_RDWR, unix.O_RDONLY | unix.O_DIRECTORY} {
			open("fresh", n, fl)
		}
	}
	for _, fl := range []int{unix.O_CREAT, unix.O_CREAT | unix.O_EXCL, unix.O_TRUNC | unix.O_WRONLY, unix.O_WRONLY,
		unix.O_DIRECTORY | unix.O_CREAT, unix.O_PATH | unix.O_CREAT | unix.O_EXCL, unix.O_NOFOLLOW, unix.O_TMPFILE | unix.O_RDWR} {
		for _, n := range []string{"b", "x"} {
			open("open flags", n, fl)
		}
	}
	open("symlink", "s", unix.O_RDONLY)
	open("symlink", "s", unix.O_PATH)
	open("symlink", "s", unix.O_PATH|unix.O_NOFOLLOW)
	open("symlink", "s", unix.O_CREAT)
	// Connectable handles need a file system that decodes parents: not
	// tmpfs. A handle's type may carry FILEID_IS_CONNECTABLE and
	// FILEID_IS_DIR (which must then name a directory), no other flag.
	for _, n := range []string{"b", "x", "d/e"} {
		get(n, vfs.AT_HANDLE_CONNECTABLE)
	}
	bh, xh := handles["b"], handles["x"]
	for _, fl := range []int32{vfs.FILEID_IS_DIR, vfs.FILEID_IS_CONNECTABLE, vfs.FILEID_IS_DIR | vfs.FILEID_IS_CONNECTABLE} {
		for _, n := range []string{"b", "x"} {
			h := handles[n]
			handles["flagged"] = [2]unix.FileHandle{unix.NewFileHandle(h[0].Type()|fl, h[0].Bytes()), unix.NewFileHandle(h[1].Type()|fl, h[1].Bytes())}
			open(fmt.Sprintf("type flag %#x on %s", fl, n), "flagged", unix.O_RDONLY)
		}
	}
	handles["user flag"] = [2]unix.FileHandle{unix.NewFileHandle(bh[0].Type()|0x40000, bh[0].Bytes()),
		unix.NewFileHandle(bh[1].Type()|0x40000, bh[1].Bytes())}
	open("unknown user flag", "user flag", unix.O_RDONLY)
	handles["short"] = [2]unix.FileHandle{unix.NewFileHandle(bh[0].Type(), bh[0].Bytes()[:8]),
		unix.NewFileHandle(bh[1].Type(), bh[1].Bytes()[:8])}
	open("short", "short", unix.O_RDONLY)
	handles["long"] = [2]unix.FileHandle{unix.NewFileHandle(bh[0].Type(), append(bh[0].Bytes(), make([]byte, 100)...)),
		unix.NewFileHandle(bh[1].Type(), append(bh[1].Bytes(), make([]byte, 100)...))}
	open("long", "long", unix.O_RDONLY)
	handles["oversized"] = [2]unix.FileHandle{unix.NewFileHandle(bh[0].Type(), make([]byte, 129)),
		unix.NewFileHandle(bh[1].Type(), make([]byte, 129))}
	open("oversized", "oversized", unix.O_RDONLY)
	handles["empty"] = [2]unix.FileHandle{unix.NewFileHandle(bh[0].Type(), nil), unix.NewFileHandle(bh[1].Type(), nil)}
	open("empty", "empty", unix.O_RDONLY)
	for _, fl := range []int{unix.AT_EMPTY_PATH, vfs.AT_HANDLE_FID, vfs.AT_HANDLE_MNT_ID_UNIQUE, vfs.AT_HANDLE_CONNECTABLE | unix.AT_EMPTY_PATH} {
		get("b", fl)
	}

	// Names change; handles keep naming the file.
	do("rename", "a", "d/a2")
	open("renamed", "a", unix.O_RDONLY)
	do("rename", "d", "x/d2")
	open("renamed dir", "d/e", unix.O_RDONLY)
	open("renamed dir", "d", unix.O_RDONLY|unix.O_DIRECTORY)
	do("link", "b", "b2")
	do("unlink", "b", "")
	open("linked then unlinked", "b", unix.O_RDONLY)
	// An unlinked file lives while open, then its handle is stale.
	hfd, err := unix.Open(hp("c"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	must(t, err)
	ofd, err := p.Open(op("c"), unix.O_RDONLY, 0)
	must(t, err)
	do("unlink", "c", "")
	open("unlinked, still open", "c", unix.O_RDONLY)
	unix.Close(hfd)
	p.Close(ofd)
	open("unlinked and closed", "c", unix.O_RDONLY)
	do("unlink", "b2", "")
	open("last link gone", "b", unix.O_RDONLY)
	do("rmdir", "x/d2", "") // ENOTEMPTY
	do("unlink", "x/d2/e", "")
	do("unlink", "x/d2/a2", "")
	do("rmdir", "x/d2", "")
	open("removed dir", "d", unix.O_RDONLY|unix.O_DIRECTORY)

	// Corrupted handles: another generation is stale, an empty one
	// invalid, a short one stale.
	get("x", 0)
	flip := func(h unix.FileHandle, i int) unix.FileHandle {
		b := append([]byte(nil), h.Bytes()...)
		b[i] ^= 0x55
		return unix.NewFileHandle(h.Type(), b)
	}
	xh = handles["x"]
	handles["gen"] = [2]unix.FileHandle{flip(xh[0], 0), flip(xh[1], len(xh[1].Bytes())-1)}
	open("other generation", "gen", unix.O_RDONLY)
	handles["ino"] = [2]unix.FileHandle{unix.NewFileHandle(xh[0].Type(), append([]byte{0xff, 0xff, 0xff, 0x7f}, xh[0].Bytes()[4:]...)),
		unix.NewFileHandle(xh[1].Type(), append([]byte{0xff, 0xff, 0xff, 0x7f}, xh[1].Bytes()[4:]...))}
	open("no such inode", "ino", unix.O_RDONLY)
	handles["type"] = [2]unix.FileHandle{unix.NewFileHandle(0x7e, xh[0].Bytes()), unix.NewFileHandle(0x7e, xh[1].Bytes())}
	open("unknown type", "type", unix.O_RDONLY)

	// An open directory removed: Linux still finds its inode.
	must(t, os.Mkdir(hp("od"), 0o755))
	must(t, p.Mkdir(op("od"), 0o755))
	get("od", 0)
	hfd, err = unix.Open(hp("od"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	must(t, err)
	ofd, err = p.Open(op("od"), unix.O_RDONLY, 0)
	must(t, err)
	do("rmdir", "od", "")
	open("removed dir, still open", "od", unix.O_RDONLY|unix.O_DIRECTORY)
	unix.Close(hfd)
	p.Close(ofd)
	open("removed dir, closed", "od", unix.O_RDONLY|unix.O_DIRECTORY)
	// An O_PATH mount descriptor is refused (EBADF).
	hpath, err := unix.Open(host, unix.O_PATH|unix.O_CLOEXEC, 0)
	must(t, err)
	opath, err := p.Open("/tmp/fh", unix.O_PATH, 0)
	must(t, err)
	_, herr := unix.OpenByHandleAt(hpath, xh[0], unix.O_RDONLY)
	_, oerr := p.OpenByHandleAt(opath, xh[1], unix.O_RDONLY)
	cmp("O_PATH mount descriptor", errnoOf(herr), errnoOf(oerr))
	unix.Close(hpath)

	// Without CAP_DAC_READ_SEARCH: EPERM.
	user := vfs.NewProcCred(p.Namespace(), 1000, 1000)
	uroot, err := user.Open("/tmp/fh", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	_, uerr := user.OpenByHandleAt(uroot, xh[1], unix.O_RDONLY)
	cmp("unprivileged open_by_handle_at", unix.EPERM, errnoOf(uerr))
	t.Logf("%d results compared", compared)
}
