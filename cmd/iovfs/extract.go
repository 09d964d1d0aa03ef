package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/shell"
	"github.com/iovfs/iovfs/vfs"
)

// runBuiltinOn runs the shell builtin name on the image path, from the
// image's root, so that names print as paths inside the image.
func runBuiltinOn(p *vfs.Proc, name string, flags []string, npath, path string, stdout, stderr io.Writer) int {
	rel := strings.TrimPrefix(path, "/")
	if rel == "" {
		rel = "."
	}
	args := append(append([]string{name}, flags...), rel)
	return shell.RunCommand(context.Background(), p, imageMount, args, nil, stdout, stderr)
}

// printTree prints the tree under npath as tree(1) does.
func printTree(p *vfs.Proc, npath, path string, stdout, stderr io.Writer) int {
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	name := strings.TrimPrefix(path, "/")
	if name == "" {
		name = "."
	}
	fmt.Fprintln(w, name)
	var dirs, files int
	status := 0
	var walk func(dir, prefix string)
	walk = func(dir, prefix string) {
		ents, err := listDir(p, dir)
		if err != nil {
			fmt.Fprintf(stderr, "iovfs tree: %s: %v\n", dir, err)
			status = 1
			return
		}
		for i, e := range ents {
			branch, next := "├── ", "│   "
			if i == len(ents)-1 {
				branch, next = "└── ", "    "
			}
			full := dir + "/" + e.Name
			line := prefix + branch + e.Name
			if e.Type == unix.DT_LNK {
				if t, err := p.Readlink(full); err == nil {
					line += " -> " + t
				}
			}
			fmt.Fprintln(w, line)
			if e.Type == unix.DT_DIR {
				dirs++
				walk(full, prefix+next)
			} else {
				files++
			}
		}
	}
	walk(npath, "")
	fmt.Fprintf(w, "\n%d %s, %d %s\n", dirs, plural(dirs, "directory", "directories"), files, plural(files, "file", "files"))
	return status
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// listDir lists a directory without "." and "..", sorted by name.
func listDir(p *vfs.Proc, dir string) ([]vfs.Dirent, error) {
	fd, err := p.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer p.Close(fd)
	var out []vfs.Dirent
	for {
		ds, err := p.Getdents(fd)
		if err != nil {
			return nil, err
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			if d.Name != "." && d.Name != ".." {
				out = append(out, d)
			}
		}
	}
	sortDirents(out)
	return out, nil
}

func sortDirents(ds []vfs.Dirent) {
	sort.Slice(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name })
}

// extraction is the state of one "iovfs cp": a parallel copy of a tree
// from the namespace to the host.
type extraction struct {
	p       *vfs.Proc
	archive bool // -a: ownership (as root) and xattrs too
	root    bool
	stderr  io.Writer

	// mu protects errs, first and links, and serialises writes to stderr.
	mu    sync.Mutex
	errs  int
	first map[[2]uint64]string // (dev, ino) of a multiply linked file -> its first host path
	// links are the hard links to make once every file is written.
	links [][2]string

	files chan fileJob
	wg    sync.WaitGroup
	// dirs are the directories whose times and modes are set last,
	// deepest first.
	dirs []dirJob
}

type fileJob struct {
	src, dst string
	st       *vfs.Stat // nil: the worker stats it
}

type dirJob struct {
	dst string
	st  vfs.Stat
	src string
}

func (x *extraction) fail(format string, a ...any) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.errs++
	// Under mu too: the workers report at once, and stderr (a
	// bytes.Buffer in tests, a pipe) is not safe for concurrent writes.
	fmt.Fprintf(x.stderr, "iovfs cp: "+format+"\n", a...)
}

// extract copies npath (a file or, with -r/-a, a tree) to the host path
// dest, keeping modes, times, symlinks, hard links and holes; with -a
// also ownership (as root) and extended attributes. Files are copied by
// one goroutine per core.
func extract(p *vfs.Proc, npath, dest string, flags []string, stderr io.Writer) int {
	rec, archive := false, false
	for _, f := range flags {
		for _, c := range strings.TrimPrefix(f, "-") {
			switch c {
			case 'r', 'R':
				rec = true
			case 'a':
				rec, archive = true, true
			default:
				fmt.Fprintf(stderr, "iovfs cp: invalid option -- '%c'\n", c)
				return 2
			}
		}
	}
	st, err := p.Lstat(npath)
	if err != nil {
		fmt.Fprintf(stderr, "iovfs cp: %s: %v\n", npath, err)
		return 1
	}
	if st.IsDir() && !rec {
		fmt.Fprintf(stderr, "iovfs cp: -r not specified; omitting directory '%s'\n", strings.TrimPrefix(npath, imageMount))
		return 1
	}
	if hs, err := os.Stat(dest); err == nil && hs.IsDir() && !st.IsDir() {
		dest = filepath.Join(dest, filepath.Base(npath))
	}
	x := &extraction{p: p, archive: archive, root: os.Geteuid() == 0, stderr: stderr,
		first: map[[2]uint64]string{}, files: make(chan fileJob, 256)}
	workers := max(1, runtime.NumCPU())
	for range workers {
		x.wg.Go(func() {
			buf := make([]byte, 1<<20)
			for j := range x.files {
				x.copyFile(j, buf)
			}
		})
	}
	// Files are created with their final permission bits.
	old := unix.Umask(0)
	defer unix.Umask(old)
	x.walk(npath, dest, st)
	close(x.files)
	x.wg.Wait()
	for _, l := range x.links {
		if err := os.Link(l[0], l[1]); err != nil {
			x.fail("%v", err)
		}
	}
	for i := len(x.dirs) - 1; i >= 0; i-- {
		d := x.dirs[i]
		x.attrs(d.src, d.dst, d.st)
	}
	if x.errs > 0 {
		return 1
	}
	return 0
}

// walk creates directories and symlinks in pre-order and queues regular
// files for the workers.
func (x *extraction) walk(src, dst string, st vfs.Stat) {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := os.Mkdir(dst, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			x.fail("%v", err)
			return
		}
		x.dirs = append(x.dirs, dirJob{dst, st, src})
		ents, err := listDir(x.p, src)
		if err != nil {
			x.fail("%s: %v", src, err)
			return
		}
		for _, e := range ents {
			s := src + "/" + e.Name
			d := filepath.Join(dst, e.Name)
			if e.Type == unix.DT_REG {
				// The workers stat regular files: a lookup in a large
				// directory is the walk's main cost.
				x.files <- fileJob{src: s, dst: d}
				continue
			}
			est, err := x.p.Lstat(s)
			if err != nil {
				x.fail("%s: %v", s, err)
				continue
			}
			x.walk(s, d, est)
		}
	case unix.S_IFLNK:
		t, err := x.p.Readlink(src)
		if err != nil {
			x.fail("%s: %v", src, err)
			return
		}
		if err := os.Symlink(t, dst); err != nil {
			x.fail("%v", err)
			return
		}
		x.attrs(src, dst, st)
	case unix.S_IFREG:
		x.files <- fileJob{src, dst, &st}
	default:
		if !x.archive || !x.root {
			x.fail("%s: special file not copied (needs -a as root)", src)
			return
		}
		if err := unix.Mknod(dst, st.Mode, int(st.Rdev)); err != nil {
			x.fail("mknod %s: %v", dst, err)
			return
		}
		x.attrs(src, dst, st)
	}
}

// copyFile writes one regular file, skipping all-zero blocks so that the
// holes of the source stay holes (cp --sparse=auto's rule, which also
// keeps allocated zero blocks sparse), then sets its size and attributes.
func (x *extraction) copyFile(j fileJob, buf []byte) {
	// Open first and stat the descriptor: one lookup in the directory,
	// not two. A file that is not regular after all (the directory
	// entry's type was wrong) goes back to walk's rules.
	fd, err := x.p.Open(j.src, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil && j.st == nil {
		if st, lerr := x.p.Lstat(j.src); lerr == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
			x.notRegular(j.src, j.dst, st)
			return
		}
	}
	if err != nil {
		x.fail("%s: %v", j.src, err)
		return
	}
	defer x.p.Close(fd)
	if j.st == nil {
		st, err := x.p.Fstat(fd)
		if err != nil {
			x.fail("%s: %v", j.src, err)
			return
		}
		j.st = &st
	}
	if j.st.Mode&unix.S_IFMT != unix.S_IFREG {
		x.notRegular(j.src, j.dst, *j.st)
		return
	}
	if j.st.Nlink > 1 {
		key := [2]uint64{j.st.Dev, j.st.Ino}
		x.mu.Lock()
		first, ok := x.first[key]
		if ok {
			x.links = append(x.links, [2]string{first, j.dst})
		} else {
			x.first[key] = j.dst
		}
		x.mu.Unlock()
		if ok {
			return
		}
	}
	// Plain descriptors, not *os.File: no poller registration, no
	// allocation, four host calls for a small file (open, pwrite,
	// futimens, close).
	out, err := unix.Open(j.dst, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, j.st.Mode&0o777)
	if err != nil {
		x.fail("create %s: %v", j.dst, err)
		return
	}
	defer unix.Close(out)
	ok := true
	end := int64(0) // end of the last byte written
	const blk = 4096
	for off := int64(0); off < j.st.Size; {
		n, err := x.p.Pread(fd, buf, off)
		if err != nil {
			x.fail("%s: %v", j.src, err)
			ok = false
			break
		}
		if n == 0 {
			break
		}
		b := buf[:n]
		for i := 0; i < len(b); i += blk {
			e := min(i+blk, len(b))
			if allZero(b[i:e]) {
				continue
			}
			// Coalesce the run of non-zero blocks into one write.
			k := e
			for k < len(b) && !allZero(b[k:min(k+blk, len(b))]) {
				k = min(k+blk, len(b))
			}
			if err := pwriteAll(out, b[i:k], off+int64(i)); err != nil {
				x.fail("write %s: %v", j.dst, err)
				ok = false
				break
			}
			end = off + int64(k)
			i = k - blk
		}
		if !ok {
			break
		}
		off += int64(n)
	}
	if ok && end != j.st.Size {
		if err := unix.Ftruncate(out, j.st.Size); err != nil {
			x.fail("truncate %s: %v", j.dst, err)
		}
	}
	x.fdAttrs(j.src, j.dst, out, *j.st)
}

// notRegular copies what a directory entry typed DT_REG turned out not to
// be (a damaged image): symlinks and special files as walk does; a
// directory is refused, since only the walker may queue work.
func (x *extraction) notRegular(src, dst string, st vfs.Stat) {
	if st.IsDir() {
		x.fail("%s: directory behind a regular file's directory entry", src)
		return
	}
	x.walk(src, dst, st)
}

func pwriteAll(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if err != nil {
			return err
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// fdAttrs is attrs for a regular file open as fd: the mode was set at
// creation (the command runs with umask 0) unless it has special bits.
func (x *extraction) fdAttrs(src, dst string, fd int, st vfs.Stat) {
	if x.archive {
		x.attrs(src, dst, st)
		return
	}
	if st.Mode&0o7000 != 0 {
		if err := unix.Fchmod(fd, st.Mode&0o7777); err != nil {
			x.fail("%v", err)
		}
	}
	ts := [2]unix.Timespec{unix.NsecToTimespec(st.Atime.UnixNano()), unix.NsecToTimespec(st.Mtime.UnixNano())}
	// utimensat(fd, NULL, ts, 0) is futimens(3).
	if _, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0); e != 0 {
		x.fail("futimens %s: %v", dst, e)
	}
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// attrs sets mode, times and, with -a, ownership and xattrs, on a host
// path (not following a final symlink).
func (x *extraction) attrs(src, dst string, st vfs.Stat) {
	link := st.Mode&unix.S_IFMT == unix.S_IFLNK
	if x.archive {
		if x.root {
			if err := os.Lchown(dst, int(st.Uid), int(st.Gid)); err != nil {
				x.fail("%v", err)
			}
		}
		if names, err := x.p.Listxattr(src); err == nil {
			for _, n := range names {
				v, err := x.p.Getxattr(src, n)
				if err != nil {
					continue
				}
				if err := unix.Lsetxattr(dst, n, v, 0); err != nil && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EPERM) {
					x.fail("setxattr %s %s: %v", dst, n, err)
				}
			}
		}
	}
	if !link {
		if err := unix.Chmod(dst, st.Mode&0o7777); err != nil {
			x.fail("%v", err)
		}
	}
	ts := []unix.Timespec{unix.NsecToTimespec(st.Atime.UnixNano()), unix.NsecToTimespec(st.Mtime.UnixNano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		x.fail("%v", err)
	}
}
