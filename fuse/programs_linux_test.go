package fuse

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// sh runs a shell command line in dir with a time limit and fails the
// test with its output if it fails. The shell changes to dir itself:
// exec.Cmd.Dir would make the forked child chdir into the export before
// exec, while this process, which serves the export, is still inside
// fork (under the race detector that blocks the server: a deadlock).
func sh(t *testing.T, dir, cmdline string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", `cd "$0" && `+cmdline, dir)
	c.Dir = "/"
	c.Env = append(os.Environ(), "LC_ALL=C", "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, out)
	}
	return string(out)
}

func need(t *testing.T, progs ...string) {
	t.Helper()
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			testenv.SkipPrivileged(t, p+" is not installed (.ci/run installs it)")
		}
	}
}

// makeTree fills dir with files of assorted sizes (empty, small, larger
// than a FUSE request, sparse), a symlink, a hard link, a FIFO, a
// subdirectory and assorted modes and times.
func makeTree(t *testing.T, dir string) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	for i, size := range []int{0, 1, 100, 4096, 4097, 300 << 10, 2<<20 + 17} {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		sub := dir
		if i%2 == 1 {
			sub = filepath.Join(dir, "sub", "deeper")
		}
		if err := os.MkdirAll(sub, 0o750); err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(sub, fmt.Sprintf("f%d", i))
		if err := os.WriteFile(name, b, 0o640+fs.FileMode(i%3)); err != nil {
			t.Fatal(err)
		}
		mt := time.Date(2020, 1, 2, 3, 4, 5, i*1000, time.UTC)
		if err := os.Chtimes(name, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("end"), 10<<20)
	f.Close()
	if err := os.Symlink("sub/deeper/f1", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "f2"), filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "sub"), 0o711); err != nil {
		t.Fatal(err)
	}
}

// treeSummary describes every file under dir: path, type and mode,
// size, content hash or link target, and mtime; with links, also which
// names share an inode.
func treeSummary(t *testing.T, dir string, times bool) string {
	t.Helper()
	var b strings.Builder
	inodes := map[uint64]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		var st syscall.Stat_t
		if err := syscall.Lstat(path, &st); err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s mode=%o", rel, st.Mode)
		if times && st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			fmt.Fprintf(&b, " mtime=%d.%09d", st.Mtim.Sec, st.Mtim.Nsec)
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " size=%d sha=%x", st.Size, sha256.Sum256(data))
			if st.Nlink > 1 {
				if first, ok := inodes[st.Ino]; ok {
					fmt.Fprintf(&b, " linkof=%s", first)
				} else {
					inodes[st.Ino] = rel
				}
			}
		case syscall.S_IFLNK:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " -> %s", target)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func tmpfsExport(t *testing.T) string {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{})
	return mnt
}

// TestCpA copies a tree into a tmpfs export with cp -a and back out, and
// compares types, modes, sizes, contents, link targets, hard links and
// modification times.
func TestCpA(t *testing.T) {
	mnt := tmpfsExport(t)
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	makeTree(t, src)
	out := filepath.Join(t.TempDir(), "out")
	sh(t, "/", fmt.Sprintf("cp -a %s %s/in && cp -a %s/in %s", src, mnt, mnt, out))
	want := treeSummary(t, src, true)
	if got := treeSummary(t, filepath.Join(mnt, "in"), true); got != want {
		t.Errorf("cp -a into the export:\n got %s\nwant %s", got, want)
	}
	if got := treeSummary(t, out, true); got != want {
		t.Errorf("cp -a out of the export:\n got %s\nwant %s", got, want)
	}
}

// TestTar pipes tar c of a tree into tar x on the export, then tar c of
// the export into tar x on the host.
func TestTar(t *testing.T) {
	need(t, "tar")
	mnt := tmpfsExport(t)
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	makeTree(t, src)
	out := t.TempDir()
	os.Mkdir(filepath.Join(mnt, "x"), 0o755)
	sh(t, "/", fmt.Sprintf("tar --format=posix -C %s -cf - . | tar -C %s/x -xpf - && tar --format=posix -C %s/x -cSf - . | tar -C %s -xpf -", src, mnt, mnt, out))
	want := treeSummary(t, src, true)
	for _, dir := range []string{filepath.Join(mnt, "x"), out} {
		if got := treeSummary(t, dir, true); got != want {
			t.Errorf("tar into %s:\n got %s\nwant %s", dir, got, want)
		}
	}
}

// TestGit makes a repository on the export, commits a tree to it, and
// checks it with git fsck and a clone.
func TestGit(t *testing.T) {
	need(t, "git")
	mnt := tmpfsExport(t)
	repo := filepath.Join(mnt, "repo")
	os.Mkdir(repo, 0o755)
	makeTree(t, repo)
	os.Remove(filepath.Join(repo, "fifo"))
	sh(t, repo, "git init -q -b main . && git add -A && git -c user.name=t -c user.email=t@t commit -qm first && "+
		"echo more >> f0 && git -c user.name=t -c user.email=t@t commit -qam second && git gc -q && git fsck --strict")
	if got := sh(t, repo, "git status --porcelain"); got != "" {
		t.Errorf("git status after commit: %q", got)
	}
	if got := strings.TrimSpace(sh(t, repo, "git rev-list --count HEAD")); got != "2" {
		t.Errorf("commits: %s, want 2", got)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	sh(t, "/", "git clone -q "+repo+" "+clone)
	os.RemoveAll(filepath.Join(clone, ".git"))
	os.RemoveAll(filepath.Join(repo, ".git"))
	// git keeps contents, links and the execute bit, not modes.
	modes := regexp.MustCompile(` mode=[0-7]+| linkof=\S+`)
	got := modes.ReplaceAllString(treeSummary(t, clone, false), "")
	want := modes.ReplaceAllString(treeSummary(t, repo, false), "")
	if got != want {
		t.Errorf("clone differs from the work tree:\n got %s\nwant %s", got, want)
	}
}

// TestDd writes and reads a file with dd at several block sizes.
func TestDd(t *testing.T) {
	mnt := tmpfsExport(t)
	src := filepath.Join(t.TempDir(), "src")
	data := make([]byte, 3<<20+511)
	rand.NewChaCha8([32]byte{3, 4}).Read(data)
	os.WriteFile(src, data, 0o644)
	for _, bs := range []string{"1", "512", "4k", "65537", "1M", "4M"} {
		count := ""
		if bs == "1" {
			count = "count=70000" // a byte at a time is slow
		}
		dst := filepath.Join(mnt, "dd"+bs)
		back := filepath.Join(t.TempDir(), "back")
		sh(t, "/", fmt.Sprintf("dd if=%s of=%s bs=%s %s status=none && dd if=%s of=%s bs=%s status=none", src, dst, bs, count, dst, back, bs))
		want := data
		if count != "" {
			want = data[:70000]
		}
		got, _ := os.ReadFile(back)
		if !bytes.Equal(got, want) {
			t.Errorf("dd bs=%s: %d bytes back, want %d (equal prefix: %v)", bs, len(got), len(want), bytes.HasPrefix(want, got))
		}
	}
	// conv=notrunc overwrites in place; seek= writes past the end.
	f := filepath.Join(mnt, "dd1M")
	sh(t, "/", fmt.Sprintf("printf abc | dd of=%s bs=1 seek=10 conv=notrunc status=none && printf xyz | dd of=%s bs=1k seek=5000 status=none", f, f))
	got, _ := os.ReadFile(f)
	want := append([]byte(nil), data...)
	copy(want[10:], "abc")
	want = append(want, make([]byte, 5000<<10-len(want))...)
	want = append(want, "xyz"...)
	if !bytes.Equal(got, want) {
		t.Errorf("dd seek/notrunc: %d bytes, want %d", len(got), len(want))
	}
}

// TestFio runs a short random read-write job with verification.
func TestFio(t *testing.T) {
	need(t, "fio")
	mnt := tmpfsExport(t)
	out := sh(t, mnt, "fio --name=rw --filename=fio.dat --size=16M --rw=randrw --bs=4k --ioengine=psync "+
		"--verify=crc32c --do_verify=1 --verify_fatal=1 --number_ios=2000 --output-format=terse --terse-version=3")
	// Terse v3: field 5 is the job's error number.
	f := strings.Split(strings.TrimSpace(out), ";")
	if len(f) < 5 || f[4] != "0" {
		t.Errorf("fio: %s", out)
	}
}

// TestSqlite creates a database on the export and runs a transaction.
func TestSqlite(t *testing.T) {
	need(t, "sqlite3")
	mnt := tmpfsExport(t)
	out := sh(t, mnt, `sqlite3 db.sqlite "PRAGMA journal_mode=WAL; CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 5000) INSERT INTO t SELECT i, hex(randomblob(40)) FROM n; COMMIT;
BEGIN; DELETE FROM t WHERE a % 2 = 0; ROLLBACK;
SELECT count(*), sum(a) FROM t; PRAGMA integrity_check;"`)
	if want := "wal\n5000|12502500\nok\n"; out != want {
		t.Errorf("sqlite3: %q, want %q", out, want)
	}
	out = sh(t, mnt, `sqlite3 -bail db.sqlite "PRAGMA journal_mode=DELETE; BEGIN; UPDATE t SET b='x'; COMMIT; SELECT count(*) FROM t WHERE b='x';"`)
	if want := "delete\n5000\n"; out != want {
		t.Errorf("sqlite3 rollback journal: %q, want %q", out, want)
	}
}

// TestHostfsExport exports a hostfs mount of a host directory, copies a
// tree in with cp -a and tar, and compares what lands in the host
// directory itself.
func TestHostfsExport(t *testing.T) {
	need(t, "tar")
	p := newProc(t)
	host := t.TempDir()
	if err := p.Mount(host, "/mnt", "hostfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	mnt, _ := export(t, p, "/mnt", Options{})
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	makeTree(t, src)
	sh(t, "/", fmt.Sprintf("cp -a %s %s/cp && mkdir %s/tar && tar --format=posix -C %s -cf - . | tar -C %s/tar -xpf -", src, mnt, mnt, src, mnt))
	want := treeSummary(t, src, true)
	for _, d := range []string{"cp", "tar"} {
		if got := treeSummary(t, filepath.Join(host, d), true); got != want {
			t.Errorf("%s into a hostfs export, seen in the host directory:\n got %s\nwant %s", d, got, want)
		}
		if got := treeSummary(t, filepath.Join(mnt, d), true); got != want {
			t.Errorf("%s into a hostfs export, seen through it:\n got %s\nwant %s", d, got, want)
		}
	}
}

// TestCacheCoherence changes a file in-process, behind the export's
// back, between two opens through the export: the second open sees the
// new bytes (the page cache is kept only when the file is unchanged),
// and an unchanged file reads the same bytes again.
func TestCacheCoherence(t *testing.T) {
	p := newProc(t)
	mnt, _ := export(t, p, "/tmp", Options{})
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("first version"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"first version", "first version", "second!", "second!", "third, longer than the rest"} {
		if i == 2 || i == 4 {
			fd, err := p.Open("/tmp/f", unix.O_WRONLY|unix.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			p.Write(fd, []byte(want))
			p.Close(fd)
			// No wait for the kernel's cached attributes to expire:
			// with them still fresh, only the open's cache decision
			// keeps stale pages out (a short READ then fixes the
			// size).
		}
		got, err := os.ReadFile(filepath.Join(mnt, "f"))
		if err != nil || string(got) != want {
			t.Errorf("open %d: %q, %v; want %q", i, got, err, want)
		}
	}
}
