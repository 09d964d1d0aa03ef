package wasi

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestConfinement: no path function leaves a preopen that is not the
// guest's root ("/w" here): "..", absolute paths and symlinks out give
// ENOTCAPABLE, and nothing outside changes. In a preopen named "/", ".."
// at the top stays there and an absolute symlink resolves inside it.
func TestConfinement(t *testing.T) {
	p := newProc(t)
	p.Mkdir("/w/sub", 0o755)
	p.Mkdir("/w2", 0o755)
	fd, _ := p.Open("/secret", unix.O_WRONLY|unix.O_CREAT, 0o644)
	p.Write(fd, []byte("s"))
	p.Close(fd)
	p.Symlink("/secret", "/w/abs")
	p.Symlink("../../secret", "/w/sub/rel")
	p.Symlink("sub", "/w/in")
	g := newGuest(t, p, Config{Preopens: []Preopen{{Path: "/w", Guest: "/w"}, {Path: "/w2", Guest: "/"}}}, nil)

	for _, path := range []string{"../secret", "/secret", "abs", "sub/rel", "sub/../../secret", "in/../../secret", ".."} {
		if e, _ := g.open(3, path, 0, rightFdRead, 0); e != errnoNotcapable {
			t.Errorf("path_open(%q) = errno %d, want ENOTCAPABLE (%d)", path, e, errnoNotcapable)
		}
		a, n := g.str(60000, path)
		if e := g.call("path_filestat_get", 3, 1, a, n, 61000); e != errnoNotcapable {
			t.Errorf("path_filestat_get(%q) = errno %d, want ENOTCAPABLE", path, e)
		}
	}
	for _, path := range []string{"../x", "/x", "sub/../../x", "/", "///"} {
		a, n := g.str(60000, path)
		if e := g.call("path_create_directory", 3, a, n); e != errnoNotcapable {
			t.Errorf("path_create_directory(%q) = errno %d, want ENOTCAPABLE", path, e)
		}
	}
	a, n := g.str(60000, "../secret")
	if e := g.call("path_unlink_file", 3, a, n); e != errnoNotcapable {
		t.Errorf("path_unlink_file(../secret) = errno %d, want ENOTCAPABLE", e)
	}
	if _, err := p.Stat("/secret"); err != nil {
		t.Fatalf("/secret after the attempts: %v", err)
	}
	if _, err := p.Stat("/x"); err == nil {
		t.Fatal("a directory was made outside the preopen")
	}
	// Inside: a relative symlink that stays in, and "sub/..".
	for _, path := range []string{"in", "sub/..", "in/../sub"} {
		if e, fd := g.open(3, path, 0, rightFdReaddir, 0); e != 0 {
			t.Errorf("path_open(%q) = errno %d, want 0", path, e)
		} else {
			g.call("fd_close", uint64(fd))
		}
	}

	// The root preopen: "..", "/" and an absolute symlink stay in it.
	p.Mkdir("/w2/d", 0o755)
	p.Symlink("/d", "/w2/absd")
	for _, path := range []string{"..", "../d", "/d", "absd", "d/../../d"} {
		if e, fd := g.open(4, path, 0, rightFdReaddir, 0); e != 0 {
			t.Errorf("root preopen: path_open(%q) = errno %d, want 0", path, e)
		} else {
			st, _ := p.Fstat(int(fd))
			want, _ := p.Stat("/w2/d")
			if path == ".." {
				want, _ = p.Stat("/w2")
			}
			if st.Ino != want.Ino {
				t.Errorf("root preopen: path_open(%q) opened inode %d, want %d", path, st.Ino, want.Ino)
			}
			g.call("fd_close", uint64(fd))
		}
	}
}

// TestPrestat: preopens are fds 3 and 4 with their guest names; fd 5 is
// not one (EBADF); a short buffer gives ENAMETOOLONG.
func TestPrestat(t *testing.T) {
	p := newProc(t)
	g := newGuest(t, p, Config{Preopens: []Preopen{{Path: "/w", Guest: "/data"}, {Path: "/tmp"}}}, nil)
	for fd, name := range map[uint64]string{3: "/data", 4: "/tmp"} {
		if e := g.call("fd_prestat_get", fd, 100); e != 0 || g.u32(100) != 0 || g.u32(104) != uint32(len(name)) {
			t.Fatalf("fd_prestat_get(%d) = errno %d, tag %d, len %d", fd, e, g.u32(100), g.u32(104))
		}
		if e := g.call("fd_prestat_dir_name", fd, 200, uint64(len(name))); e != 0 || string(g.bytes(200, uint32(len(name)))) != name {
			t.Fatalf("fd_prestat_dir_name(%d) = errno %d, %q", fd, e, g.bytes(200, uint32(len(name))))
		}
		if e := g.call("fd_prestat_dir_name", fd, 200, uint64(len(name)-1)); e != errnoNametoolong {
			t.Fatalf("fd_prestat_dir_name(%d) with a short buffer = errno %d, want ENAMETOOLONG", fd, e)
		}
	}
	if e := g.call("fd_prestat_get", 5, 100); e != errnoBadf {
		t.Fatalf("fd_prestat_get(5) = errno %d, want EBADF", e)
	}
	if e := g.call("fd_prestat_get", 1, 100); e != errnoBadf {
		t.Fatalf("fd_prestat_get(1) = errno %d, want EBADF", e)
	}
}

// TestReaddirCookies: listing a directory of 100 files through a 100-byte
// buffer, resuming each time from the last whole entry's d_next, gives
// ".", ".." and every file exactly once.
func TestReaddirCookies(t *testing.T) {
	p := newProc(t)
	want := []string{".", ".."}
	for i := range 100 {
		name := fmt.Sprintf("file-%03d", i)
		fd, _ := p.Open("/w/"+name, unix.O_WRONLY|unix.O_CREAT, 0o644)
		p.Close(fd)
		want = append(want, name)
	}
	g := newGuest(t, p, Config{Preopens: []Preopen{{Path: "/w", Guest: "/w"}}}, nil)
	const buf, bufLen, used = 1000, 100, 2000
	var got []string
	var cookie uint64
	for calls := 0; ; calls++ {
		if calls > 1000 {
			t.Fatal("fd_readdir does not end")
		}
		if e := g.call("fd_readdir", 3, buf, bufLen, cookie, used); e != 0 {
			t.Fatalf("fd_readdir: errno %d", e)
		}
		n := g.u32(used)
		b := g.bytes(buf, n)
		for len(b) >= 24 {
			namlen := binary.LittleEndian.Uint32(b[16:])
			if uint32(len(b)) < 24+namlen {
				break // cut off: ask again from cookie
			}
			got = append(got, string(b[24:24+namlen]))
			cookie = binary.LittleEndian.Uint64(b)
			if typ := b[20]; (got[len(got)-1][0] == '.') != (typ == filetypeDirectory) {
				t.Fatalf("%s: d_type %d", got[len(got)-1], typ)
			}
			b = b[24+namlen:]
		}
		if n < bufLen {
			break
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("listing:\n got %v\nwant %v", got, want)
	}
}

// TestRights: a descriptor opened with read rights only cannot fd_write
// (ENOTCAPABLE), and the process refuses the write too, since the access
// mode follows the rights (EBADF if the check were skipped).
func TestRights(t *testing.T) {
	g := newGuest(t, procWithFile(t), Config{Preopens: []Preopen{{Path: "/w", Guest: "/"}}}, nil)
	e, fd := g.open(3, "f", 0, rightFdRead, 0)
	if e != 0 {
		t.Fatal(e)
	}
	g.iovecs(1024, [2]uint32{4096, 4})
	if e := g.call("fd_write", uint64(fd), 1024, 1, 2048); e != errnoNotcapable {
		t.Fatalf("fd_write on a read-only descriptor: errno %d, want ENOTCAPABLE", e)
	}
	if e := g.call("fd_fdstat_get", uint64(fd), 3000); e != 0 {
		t.Fatal(e)
	}
	if ft, base := g.bytes(3000, 1)[0], binary.LittleEndian.Uint64(g.bytes(3008, 8)); ft != filetypeRegularFile || base != rightFdRead {
		t.Fatalf("fdstat: filetype %d, rights %#x; want %d, %#x", ft, base, filetypeRegularFile, rightFdRead)
	}
	// A character device the module did not open (fd 1 is /dev/null)
	// has no fd_seek or fd_tell, as wasi-libc's isatty expects of a tty.
	if e := g.call("fd_fdstat_get", 1, 3000); e != 0 {
		t.Fatal(e)
	}
	if ft, base := g.bytes(3000, 1)[0], binary.LittleEndian.Uint64(g.bytes(3008, 8)); ft != filetypeCharacterDevice || base&(rightFdSeek|rightFdTell) != 0 || base&rightFdWrite == 0 {
		t.Fatalf("fdstat of fd 1: filetype %d, rights %#x", ft, base)
	}
	// Asking for more than the directory may hand on.
	p := newProc(t)
	g2 := newGuest(t, p, Config{Preopens: []Preopen{{Path: "/w", Guest: "/"}}}, nil)
	e, dfd := g2.open(3, ".", oflagDirectory, rightFdReaddir|rightPathOpen, 0)
	if e != 0 {
		t.Fatal(e)
	}
	a, n := g2.str(60000, "x")
	if e := g2.call("path_open", uint64(dfd), 1, a, n, oflagCreat, rightFdRead|rightFdWrite, 0, 0, 61000); e != errnoNotcapable {
		t.Fatalf("path_open(O_CREAT) through a directory without path_create_file: errno %d, want ENOTCAPABLE", e)
	}
	if _, err := p.Stat("/w/x"); err == nil {
		t.Fatal("the file was created anyway")
	}
	e, dfd = g2.open(3, ".", oflagDirectory, rightFdReaddir|rightPathOpen|rightPathCreateFile, 0)
	if e != 0 {
		t.Fatal(e)
	}
	a, n = g2.str(60000, "x")
	if e := g2.call("path_open", uint64(dfd), 1, a, n, oflagCreat, rightFdRead|rightFdWrite, 0, 0, 61000); e != 0 {
		t.Fatalf("path_open(O_CREAT) through a directory with path_create_file: errno %d", e)
	}
	// Rights beyond the directory's inheriting rights.
	a, n = g2.str(60000, ".")
	if e := g2.call("path_open", 3, 1, a, n, oflagDirectory, rightPathOpen, rightPathOpen, 0, 61000); e != 0 {
		t.Fatal(e)
	}
	narrow := uint64(g2.u32(61000))
	a, n = g2.str(60000, "x")
	if e := g2.call("path_open", narrow, 1, a, n, 0, rightFdRead, 0, 0, 61000); e != errnoNotcapable {
		t.Fatalf("path_open asking for fd_read through a directory that inherits only path_open: errno %d, want ENOTCAPABLE", e)
	}
}

// TestErrnoNames: every Linux errno whose name is in WASI's list maps to
// that entry; the others map to EIO.
func TestErrnoNames(t *testing.T) {
	names := strings.Fields(`SUCCESS 2BIG ACCES ADDRINUSE ADDRNOTAVAIL AFNOSUPPORT AGAIN ALREADY
		BADF BADMSG BUSY CANCELED CHILD CONNABORTED CONNREFUSED CONNRESET DEADLK DESTADDRREQ DOM
		DQUOT EXIST FAULT FBIG HOSTUNREACH IDRM ILSEQ INPROGRESS INTR INVAL IO ISCONN ISDIR LOOP
		MFILE MLINK MSGSIZE MULTIHOP NAMETOOLONG NETDOWN NETRESET NETUNREACH NFILE NOBUFS NODEV
		NOENT NOEXEC NOLCK NOLINK NOMEM NOMSG NOPROTOOPT NOSPC NOSYS NOTCONN NOTDIR NOTEMPTY
		NOTRECOVERABLE NOTSOCK NOTSUP NOTTY NXIO OVERFLOW OWNERDEAD PERM PIPE PROTO
		PROTONOSUPPORT PROTOTYPE RANGE ROFS SPIPE SRCH STALE TIMEDOUT TXTBSY XDEV NOTCAPABLE`)
	if len(names) != int(errnoNotcapable)+1 {
		t.Fatalf("%d names", len(names))
	}
	index := map[string]uint32{}
	for i, n := range names {
		index["E"+n] = uint32(i)
	}
	index["EOPNOTSUPP"] = errnoNotsup
	mapped := 0
	for e := unix.Errno(1); e < 134; e++ {
		name := unix.ErrnoName(e)
		want, ok := index[name]
		if !ok {
			want = errnoIo
		} else {
			mapped++
		}
		if got := linuxErrno(e); got != want {
			t.Errorf("%s (%d) -> %d, want %d", name, e, got, want)
		}
	}
	if mapped < 70 {
		t.Fatalf("only %d Linux errnos have WASI twins", mapped)
	}
}

// TestInstantiateTwice: a runtime holds one wasi_snapshot_preview1; the
// second Instantiate fails and leaves no preopen open in the process.
func TestInstantiateTwice(t *testing.T) {
	p := newProc(t)
	g := newGuest(t, p, Config{Preopens: []Preopen{{Path: "/w"}}}, nil)
	if _, err := Instantiate(g.ctx, g.r, p, Config{Preopens: []Preopen{{Path: "/tmp"}}}); err == nil {
		t.Fatal("a second wasi module in one runtime was accepted")
	}
	if _, err := p.Fstat(4); err == nil {
		t.Fatal("the failed Instantiate left its preopen open as fd 4")
	}
}
