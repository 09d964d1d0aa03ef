package iovfs_test

import (
	"errors"
	"os"
	"path"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestMknodKernel makes the same nodes with mknod(2) on a host tmpfs and
// on iovfs's, and compares errnos, types, permission bits, device numbers
// and what opening the node gives.
func TestMknodKernel(t *testing.T) {
	host := hostTmpfs(t)
	p := newProc(t)
	must(t, p.Mkdir("/tmp/m", 0o755))
	must(t, p.Mkdir("/tmp/m/d", 0o755))
	must(t, unix.Mkdir(path.Join(host, "d"), 0o755))
	createFile(t, p, "/tmp/m/f", "x")
	must(t, os.WriteFile(path.Join(host, "f"), []byte("x"), 0o644))
	unix.Umask(0o022)
	cases := []struct {
		name string
		mode uint32
		dev  int
	}{
		{"fifo", unix.S_IFIFO | 0o640, 0},
		{"sock", unix.S_IFSOCK | 0o600, 0},
		{"reg", unix.S_IFREG | 0o777, 0},
		{"zero", 0o644, 0},
		{"chr", unix.S_IFCHR | 0o666, int(unix.Mkdev(1, 3))},
		{"blk", unix.S_IFBLK | 0o660, int(unix.Mkdev(7, 200))},
		{"dir", unix.S_IFDIR | 0o755, 0},
		{"bad", 0o170000 | 0o644, 0},
		{"f", unix.S_IFIFO | 0o644, 0},       // exists
		{"d", unix.S_IFREG | 0o644, 0},       // exists, a directory
		{"f/x", unix.S_IFIFO | 0o644, 0},     // through a file
		{"nope/x", unix.S_IFIFO | 0o644, 0},  // missing parent
		{"slash/", unix.S_IFIFO | 0o644, 0},  // trailing slash, new name
		{"d/", unix.S_IFIFO | 0o644, 0},      // trailing slash, existing dir
		{".", unix.S_IFIFO | 0o644, 0},       // existing
		{"d/..", unix.S_IFIFO | 0o644, 0},    // existing
		{"d/sub", unix.S_IFCHR | 0o600, 0},   // device 0:0
		{"setid", unix.S_IFREG | 0o6755, 0},  // set-id bits kept
		{"sticky", unix.S_IFIFO | 0o1777, 0}, // sticky bit kept
	}
	for _, c := range cases {
		herr := errnoOf(unix.Mknod(path.Join(host, c.name), c.mode, c.dev))
		oerr := errnoOf(p.Mknod(path.Join("/tmp/m", c.name), c.mode, uint64(c.dev)))
		if herr != oerr {
			t.Errorf("mknod %s %#o: iovfs %v, Linux %v", c.name, c.mode, oerr, herr)
			continue
		}
		if herr != 0 {
			continue
		}
		var hs unix.Stat_t
		must(t, unix.Lstat(path.Join(host, c.name), &hs))
		ost, err := p.Lstat(path.Join("/tmp/m", c.name))
		must(t, err)
		if ost.Mode != hs.Mode || ost.Rdev != hs.Rdev || ost.Size != hs.Size || ost.Nlink != uint64(hs.Nlink) {
			t.Errorf("%s: iovfs mode %#o rdev %#x size %d nlink %d, Linux mode %#o rdev %#x size %d nlink %d",
				c.name, ost.Mode, ost.Rdev, ost.Size, ost.Nlink, hs.Mode, hs.Rdev, hs.Size, hs.Nlink)
		}
		if hs.Mode&unix.S_IFMT == unix.S_IFSOCK {
			// Opening a socket's inode gives ENXIO in Linux.
			_, herr := unix.Open(path.Join(host, c.name), unix.O_RDONLY, 0)
			_, oerr := p.Open(path.Join("/tmp/m", c.name), unix.O_RDONLY, 0)
			if errnoOf(herr) != errnoOf(oerr) {
				t.Errorf("open %s: iovfs %v, Linux %v", c.name, oerr, herr)
			}
		}
	}
	// Truncating a special file is EINVAL, as for any non-regular file.
	herr := errnoOf(unix.Truncate(path.Join(host, "fifo"), 0))
	oerr := errnoOf(p.Truncate("/tmp/m/fifo", 0))
	if herr != oerr {
		t.Errorf("truncate fifo: iovfs %v, Linux %v", oerr, herr)
	}
	ents, err := listTypes(p, "/tmp/m")
	must(t, err)
	want := map[string]uint8{"fifo": unix.DT_FIFO, "sock": unix.DT_SOCK, "chr": unix.DT_CHR, "blk": unix.DT_BLK, "reg": unix.DT_REG}
	for name, typ := range want {
		if ents[name] != typ {
			t.Errorf("getdents type of %s: %d, want %d", name, ents[name], typ)
		}
	}
}

// listTypes lists dir with Getdents and returns each name's d_type.
func listTypes(p *vfs.Proc, dir string) (map[string]uint8, error) {
	fd, err := p.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer p.Close(fd)
	out := map[string]uint8{}
	for {
		ents, err := p.Getdents(fd)
		if err != nil {
			return nil, err
		}
		if len(ents) == 0 {
			return out, nil
		}
		for _, e := range ents {
			out[e.Name] = e.Type
		}
	}
}

// errnoOf reduces an error to its errno, or -1 for a non-errno error.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return ^syscall.Errno(0)
}
