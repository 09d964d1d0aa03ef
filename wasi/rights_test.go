package wasi

import (
	"encoding/binary"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDirectoryNoSeek: a directory has no fd_seek or fd_tell right, in
// its fdstat or in use (wasi-testsuite's directory_seek and
// dir_fd_op_failures).
func TestDirectoryNoSeek(t *testing.T) {
	p := newProc(t)
	g := newGuest(t, p, Config{Preopens: []Preopen{{Path: "/w", Guest: "/"}}}, nil)
	e, dfd := g.open(3, ".", oflagDirectory, dirRights, 0)
	if e != 0 {
		t.Fatal(e)
	}
	for _, fd := range []uint64{3, uint64(dfd)} {
		if e := g.call("fd_fdstat_get", fd, 3000); e != 0 {
			t.Fatal(e)
		}
		if base := binary.LittleEndian.Uint64(g.bytes(3008, 8)); base&(rightFdSeek|rightFdTell) != 0 {
			t.Errorf("fd %d: a directory's rights %#x hold fd_seek or fd_tell", fd, base)
		}
		for _, whence := range []uint64{unix.SEEK_SET, unix.SEEK_CUR, unix.SEEK_END} {
			if e := g.call("fd_seek", fd, 0, whence, 3100); e != errnoNotcapable {
				t.Errorf("fd %d: fd_seek(0, %d) of a directory: errno %d, want ENOTCAPABLE", fd, whence, e)
			}
		}
		if e := g.call("fd_tell", fd, 3100); e != errnoNotcapable {
			t.Errorf("fd %d: fd_tell of a directory: errno %d, want ENOTCAPABLE", fd, e)
		}
	}
}

// TestTruncationRights: path_open with oflags trunc needs the right to
// set the file's size, by path (path_filestat_set_size) or through the
// descriptor it will hand out (fd_filestat_set_size inherited); without
// either it gives ENOTCAPABLE and leaves the file alone. The directory Go
// opens read-only (os.Root's) has only the second, and may truncate.
func TestTruncationRights(t *testing.T) {
	p := newProc(t)
	g := newGuest(t, p, Config{Preopens: []Preopen{{Path: "/w", Guest: "/"}}}, nil)
	write := func() {
		if err := writeFile(p, "/w/f", "data"); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		st, err := p.Stat("/w/f")
		if err != nil {
			t.Fatal(err)
		}
		return st.Size
	}
	a, n := g.str(60000, ".")
	// The rights Go's syscall package asks for a read-only directory.
	goDir := dirRights &^ (rightFdDatasync | rightFdWrite | rightFdAllocate | rightPathFilestatSetSize)
	for _, c := range []struct {
		name           string
		base, inherit  uint64
		want           uint32
		truncatedAfter bool
	}{
		{"all rights", dirRights, allRights, 0, true},
		{"fd_filestat_set_size not inherited", dirRights, allRights &^ rightFdFilestatSetSize, 0, true},
		{"Go's read-only directory", goDir, fileRights, 0, true},
		{"neither", dirRights &^ rightPathFilestatSetSize, allRights &^ rightFdFilestatSetSize, errnoNotcapable, false},
	} {
		write()
		if e := g.call("path_open", 3, 1, a, n, oflagDirectory, dirRights, allRights, 0, 61000); e != 0 {
			t.Fatal(e)
		}
		dfd := uint64(g.u32(61000))
		if e := g.call("fd_fdstat_set_rights", dfd, c.base&dirRights, c.inherit); e != 0 {
			t.Fatalf("%s: fd_fdstat_set_rights: errno %d", c.name, e)
		}
		fa, fn := g.str(60100, "f")
		e := g.call("path_open", dfd, 1, fa, fn, oflagTrunc, rightFdWrite&c.inherit, 0, 0, 61000)
		if e != c.want {
			t.Errorf("%s: path_open with trunc: errno %d, want %d", c.name, e, c.want)
		}
		if e == 0 {
			g.call("fd_close", uint64(g.u32(61000)))
		}
		if got := size() == 0; got != c.truncatedAfter {
			t.Errorf("%s: file truncated %v, want %v", c.name, got, c.truncatedAfter)
		}
		g.call("fd_close", dfd)
	}
}

// TestSymlinkAbsolute: path_symlink refuses an absolute target with
// EPERM and makes nothing; relative targets work.
func TestSymlinkAbsolute(t *testing.T) {
	p := newProc(t)
	g := newGuest(t, p, Config{Preopens: []Preopen{{Path: "/w", Guest: "/"}}}, nil)
	for _, c := range []struct {
		target string
		want   uint32
	}{{"/", errnoPerm}, {"/etc/passwd", errnoPerm}, {"target", 0}, {"../w/target", 0}} {
		ta, tn := g.str(60000, c.target)
		la, ln := g.str(60200, "link")
		if e := g.call("path_symlink", ta, tn, 3, la, ln); e != c.want {
			t.Errorf("path_symlink(%q): errno %d, want %d", c.target, e, c.want)
		}
		got, err := p.Readlink("/w/link")
		if c.want != 0 && err == nil {
			t.Errorf("path_symlink(%q) failed but made a link to %q", c.target, got)
		}
		if c.want == 0 && got != c.target {
			t.Errorf("path_symlink(%q): link to %q, %v", c.target, got, err)
		}
		p.Unlink("/w/link")
	}
}

// TestSockShutdown: sock_shutdown acts on the process's descriptors:
// EBADF for one not open, ENOTSOCK for a file, EINVAL for a bad how, and
// a shutdown of an imported host socket that its peer sees.
func TestSockShutdown(t *testing.T) {
	p := newProc(t)
	g := newGuest(t, p, Config{Preopens: []Preopen{{Path: "/w", Guest: "/"}}}, nil)
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pair[1])
	f := os.NewFile(uintptr(pair[0]), "socket")
	defer f.Close()
	sfd, err := p.ImportFile(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fd, how uint64
		want    uint32
	}{
		{99, sdflagWr, errnoBadf},
		{1, sdflagRd, errnoNotsock},
		{3, sdflagRd | sdflagWr, errnoNotsock},
		{uint64(sfd), 0, errnoInval},
		{uint64(sfd), 4, errnoInval},
		{uint64(sfd), sdflagWr, 0},
	} {
		if e := g.call("sock_shutdown", c.fd, c.how); e != c.want {
			t.Errorf("sock_shutdown(%d, %d): errno %d, want %d", c.fd, c.how, e, c.want)
		}
	}
	// The peer reads the end of the stream.
	b := make([]byte, 1)
	if n, err := unix.Read(pair[1], b); n != 0 || err != nil {
		t.Errorf("the peer's read after SHUT_WR: %d, %v; want 0, nil", n, err)
	}
}

func writeFile(p interface {
	Open(string, int, uint32) (int, error)
	Write(int, []byte) (int, error)
	Close(int) error
}, name, data string) error {
	fd, err := p.Open(name, unix.O_CREAT|unix.O_TRUNC|unix.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer p.Close(fd)
	_, err = p.Write(fd, []byte(data))
	return err
}
