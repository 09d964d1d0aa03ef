package shell

import (
	"fmt"
	"io"
	"math"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "cp", summary: "copy files and directories (-r -a -p; holes stay holes)", run: runCp})
	register(&builtin{name: "mv", summary: "move or rename files", run: runMv})
	register(&builtin{name: "rm", summary: "remove files or directories (-r -f)", run: runRm})
	register(&builtin{name: "mkdir", summary: "make directories (-p -m)", run: runMkdir})
	register(&builtin{name: "rmdir", summary: "remove empty directories", run: runRmdir})
	register(&builtin{name: "ln", summary: "make links (-s -f)", run: runLn})
	register(&builtin{name: "touch", summary: "change file timestamps, create files (-d)", run: runTouch})
	register(&builtin{name: "readlink", summary: "print a symbolic link's target (-f)", run: runReadlink})
	register(&builtin{name: "truncate", summary: "shrink or extend a file (-s)", run: runTruncate})
	register(&builtin{name: "chmod", summary: "change file mode bits (octal or symbolic)", run: runChmod})
	register(&builtin{name: "chown", summary: "change file owner and group (UID[:GID])", run: runChown})
	register(&builtin{name: "mkfifo", summary: "make FIFOs (named pipes)", run: runMkfifo})
	register(&builtin{name: "stat", summary: "display file status (GNU's format; -L)", run: runStat})
}

func isDirPath(p *vfs.Proc, name string) bool {
	st, err := p.Stat(name)
	return err == nil && st.IsDir()
}

// cpState carries cp's options and the hard links seen under -a.
type cpState struct {
	recursive, preserve, links, noDeref bool
	xattrs                              bool // -a
	// inodes maps a source (dev, ino) with several links to the first
	// destination it was copied to.
	inodes map[[2]uint64]string
}

func runCp(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "rRapdfv", map[string]string{"recursive": "r", "archive": "a", "no-dereference": "d", "force": "f"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	s := &cpState{recursive: has(opts, "r") || has(opts, "R") || has(opts, "a"), xattrs: has(opts, "a"),
		preserve: has(opts, "a") || has(opts, "p"), links: has(opts, "a") || has(opts, "d"),
		inodes: map[[2]uint64]string{}}
	s.noDeref = s.links || s.recursive
	if len(ops) == 0 {
		c.usage("missing file operand")
		return 1
	}
	if len(ops) == 1 {
		return c.usage("missing destination file operand after %s", quote(ops[0]))
	}
	dst := ops[len(ops)-1]
	srcs := ops[:len(ops)-1]
	dstDir := isDirPath(c.p, dst)
	if len(srcs) > 1 && !dstDir {
		c.errorf("target %s is not a directory", quote(dst))
		return 1
	}
	status := 0
	for _, src := range srcs {
		to := dst
		if dstDir {
			to = path.Join(dst, baseName(src))
		}
		if c.cpOne(s, src, to, true) != nil {
			status = 1
		}
	}
	return status
}

// cpOne copies src to dst; top is true for a command-line operand.
func (c *cmd) cpOne(s *cpState, src, dst string, top bool) error {
	var st vfs.Stat
	var err error
	if s.noDeref && !(top && !s.links) {
		st, err = c.p.Lstat(src)
	} else {
		st, err = c.p.Stat(src)
	}
	if err != nil {
		c.errorf("cannot stat %s: %s", quote(src), errText(err))
		return err
	}
	if c.stopped() {
		return syscall.EINTR
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if !s.recursive {
			c.errorf("-r not specified; omitting directory %s", quote(src))
			return syscall.EISDIR
		}
		if err := c.p.Mkdir(dst, st.Mode&0o7777|0o700); err != nil && !isErrno(err, syscall.EEXIST) {
			c.errorf("cannot create directory %s: %s", quote(dst), errText(err))
			return err
		}
		ents, err := readDirents(c.p, src)
		if err != nil {
			c.errorf("cannot access %s: %s", quote(src), errText(err))
			return err
		}
		var first error
		for _, d := range ents {
			if err := c.cpOne(s, path.Join(src, d.Name), path.Join(dst, d.Name), false); err != nil && first == nil {
				first = err
			}
		}
		c.cpAttrs(s, src, dst, st, true)
		return first
	case unix.S_IFLNK:
		t, err := c.p.Readlink(src)
		if err == nil {
			err = c.p.Symlink(t, dst)
		}
		if err != nil {
			c.errorf("cannot create symbolic link %s: %s", quote(dst), errText(err))
			return err
		}
		if s.preserve {
			c.p.Lchown(dst, st.Uid, st.Gid)
		}
		return nil
	case unix.S_IFREG:
	default:
		if err := c.p.Mknod(dst, st.Mode, st.Rdev); err != nil {
			c.errorf("cannot create special file %s: %s", quote(dst), errText(err))
			return err
		}
		c.cpAttrs(s, src, dst, st, false)
		return nil
	}
	key := [2]uint64{st.Dev, st.Ino}
	if s.links && st.Nlink > 1 {
		if first, ok := s.inodes[key]; ok {
			if err := c.p.Link(first, dst); err != nil {
				c.errorf("cannot create hard link %s to %s: %s", quote(dst), quote(first), errText(err))
				return err
			}
			return nil
		}
		s.inodes[key] = dst
	}
	if err := c.copyFile(src, dst, st); err != nil {
		return err
	}
	c.cpAttrs(s, src, dst, st, false)
	return nil
}

// copyFile copies a regular file's bytes, leaving holes where the source
// has them (found with SEEK_DATA and SEEK_HOLE) and setting the size.
func (c *cmd) copyFile(src, dst string, st vfs.Stat) error {
	in, err := c.p.Open(src, unix.O_RDONLY, 0)
	if err != nil {
		c.errorf("cannot open %s for reading: %s", quote(src), errText(err))
		return err
	}
	c.sh.track(in)
	defer c.p.Close(in)
	out, err := c.p.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, st.Mode&0o777)
	if err != nil {
		c.errorf("cannot create regular file %s: %s", quote(dst), errText(err))
		return err
	}
	c.sh.track(out)
	defer c.p.Close(out)
	buf := make([]byte, 256<<10)
	size := st.Size
	for off := int64(0); off < size; {
		data, err := c.p.Seek(in, off, unix.SEEK_DATA)
		if err != nil {
			if isErrno(err, syscall.ENXIO) {
				break // only a hole remains
			}
			data = off // no SEEK_DATA: copy everything
		}
		hole, err := c.p.Seek(in, data, unix.SEEK_HOLE)
		if err != nil {
			hole = size
		}
		for o := data; o < hole; {
			if c.stopped() {
				return syscall.EINTR
			}
			n, err := c.p.Pread(in, buf[:min(int64(len(buf)), hole-o)], o)
			if err != nil {
				c.errorf("error reading %s: %s", quote(src), errText(err))
				return err
			}
			if n == 0 {
				hole = o
				break
			}
			if _, err := c.p.Pwrite(out, buf[:n], o); err != nil {
				c.errorf("error writing %s: %s", quote(dst), errText(err))
				return err
			}
			o += int64(n)
		}
		off = hole
	}
	if err := c.p.Ftruncate(out, size); err != nil {
		c.errorf("failed to extend %s: %s", quote(dst), errText(err))
		return err
	}
	return nil
}

func (c *cmd) cpAttrs(s *cpState, src, dst string, st vfs.Stat, dir bool) {
	if s.xattrs {
		c.cpXattrs(src, dst)
	}
	if !s.preserve {
		if dir {
			c.p.Chmod(dst, st.Mode&0o777&^c.umask())
		}
		return
	}
	c.p.Lchown(dst, st.Uid, st.Gid)
	c.p.Chmod(dst, st.Mode&0o7777)
	c.p.Utimes(dst, st.Atime, st.Mtime)
}

// cpXattrs copies the extended attributes of src to dst (cp -a's
// --preserve=xattr); a file system without them is not an error, as GNU
// cp is quiet about ENOTSUP.
func (c *cmd) cpXattrs(src, dst string) error {
	names, err := c.p.Llistxattr(src)
	if err != nil {
		return nil
	}
	for _, n := range names {
		v, err := c.p.Lgetxattr(src, n)
		if err != nil {
			continue
		}
		if err := c.p.Lsetxattr(dst, n, v, 0); err != nil && !isErrno(err, syscall.EOPNOTSUPP) {
			c.errorf("setting attribute %s for %s: %s", quote(n), quote(dst), errText(err))
			return err
		}
	}
	return nil
}

// umask reads the process's umask without changing it.
func (c *cmd) umask() uint32 {
	m := c.p.Umask(0)
	c.p.Umask(m)
	return m
}

func runMv(c *cmd, args []string) int {
	_, ops, bad := getopt(args, "fiv", map[string]string{"force": "f"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) < 2 {
		if len(ops) == 0 {
			return c.usage("missing file operand")
		}
		return c.usage("missing destination file operand after %s", quote(ops[0]))
	}
	dst := ops[len(ops)-1]
	srcs := ops[:len(ops)-1]
	dstDir := isDirPath(c.p, dst)
	if len(srcs) > 1 && !dstDir {
		c.errorf("target %s is not a directory", quote(dst))
		return 1
	}
	status := 0
	for _, src := range srcs {
		to := dst
		if dstDir {
			to = path.Join(dst, baseName(src))
		}
		if _, err := c.p.Lstat(src); err != nil {
			c.errorf("cannot stat %s: %s", quote(src), errText(err))
			status = 1
			continue
		}
		if err := c.p.Rename(src, to); err != nil {
			if isErrno(err, syscall.EXDEV) {
				s := &cpState{recursive: true, preserve: true, links: true, noDeref: true, xattrs: true, inodes: map[[2]uint64]string{}}
				if c.cpOne(s, src, to, true) == nil && c.rmTree(src, true) == nil {
					continue
				}
				status = 1
				continue
			}
			c.errorf("cannot move %s to %s: %s", quote(src), quote(to), errText(err))
			status = 1
		}
	}
	return status
}

func runRm(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "rRfdv", map[string]string{"recursive": "r", "force": "f", "dir": "d"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	force := has(opts, "f")
	rec := has(opts, "r") || has(opts, "R")
	if len(ops) == 0 && !force {
		return c.usage("missing operand")
	}
	status := 0
	for _, op := range ops {
		if b := baseName(op); b == "." || b == ".." {
			c.errorf("refusing to remove '.' or '..' directory: skipping %s", quote(op))
			status = 1
			continue
		}
		st, err := c.p.Lstat(op)
		if err != nil {
			if !(force && isErrno(err, syscall.ENOENT)) {
				c.errorf("cannot remove %s: %s", quote(op), errText(err))
				status = 1
			}
			continue
		}
		if st.IsDir() {
			if !rec {
				if has(opts, "d") {
					if err := c.p.Rmdir(op); err != nil {
						c.errorf("cannot remove %s: %s", quote(op), errText(err))
						status = 1
					}
					continue
				}
				c.errorf("cannot remove %s: Is a directory", quote(op))
				status = 1
				continue
			}
			if c.rmTree(op, false) != nil {
				status = 1
			}
			continue
		}
		if err := c.p.Unlink(op); err != nil {
			c.errorf("cannot remove %s: %s", quote(op), errText(err))
			status = 1
		}
	}
	return status
}

// rmTree removes a directory and everything below it.
func (c *cmd) rmTree(p string, quiet bool) error {
	st, err := c.p.Lstat(p)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		err := c.p.Unlink(p)
		if err != nil && !quiet {
			c.errorf("cannot remove %s: %s", quote(p), errText(err))
		}
		return err
	}
	ents, err := readDirents(c.p, p)
	if err != nil {
		c.errorf("cannot remove %s: %s", quote(p), errText(err))
		return err
	}
	var first error
	for _, d := range ents {
		if err := c.rmTree(path.Join(p, d.Name), quiet); err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	if err := c.p.Rmdir(p); err != nil {
		if !quiet {
			c.errorf("cannot remove %s: %s", quote(p), errText(err))
		}
		return err
	}
	return nil
}

// parseMode applies a chmod mode (octal, or symbolic clauses such as
// u+x,go-w,a=r) to old; dir enables X.
func parseMode(spec string, old uint32, dir bool, umask uint32) (uint32, bool) {
	if v, err := strconv.ParseUint(spec, 8, 32); err == nil {
		if v > 0o7777 {
			return 0, false
		}
		return uint32(v), true
	}
	mode := old & 0o7777
	for _, clause := range strings.Split(spec, ",") {
		i := 0
		var who uint32
		for i < len(clause) && strings.IndexByte("ugoa", clause[i]) >= 0 {
			switch clause[i] {
			case 'u':
				who |= 0o4700
			case 'g':
				who |= 0o2070
			case 'o':
				who |= 0o1007
			case 'a':
				who |= 0o7777
			}
			i++
		}
		masked := who == 0
		if masked {
			who = 0o7777
		}
		if i >= len(clause) {
			return 0, false
		}
		for i < len(clause) {
			op := clause[i]
			if op != '+' && op != '-' && op != '=' {
				return 0, false
			}
			i++
			var bits uint32
			for i < len(clause) && strings.IndexByte("rwxXst", clause[i]) >= 0 {
				switch clause[i] {
				case 'r':
					bits |= 0o444
				case 'w':
					bits |= 0o222
				case 'x':
					bits |= 0o111
				case 'X':
					if dir || old&0o111 != 0 {
						bits |= 0o111
					}
				case 's':
					bits |= 0o6000
				case 't':
					bits |= 0o1000
				}
				i++
			}
			bits &= who
			if masked {
				bits &^= umask
			}
			switch op {
			case '+':
				mode |= bits
			case '-':
				mode &^= bits
			case '=':
				mode = mode&^(who&0o777|who&0o7000&^0o1000) | bits
			}
		}
	}
	return mode, true
}

func runChmod(c *cmd, args []string) int {
	// A mode like -w looks like an option; take the first non-option
	// operand, or a leading -rwx mode, as the mode.
	var rec bool
	var ops []string
	for i, a := range args {
		if a == "-R" || a == "--recursive" {
			rec = true
			continue
		}
		if a == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		ops = append(ops, a)
	}
	if len(ops) == 0 {
		return c.usage("missing operand")
	}
	if len(ops) == 1 {
		return c.usage("missing operand after %s", quote(ops[0]))
	}
	spec := ops[0]
	status := 0
	var walk func(p string)
	walk = func(p string) {
		st, err := c.p.Stat(p)
		if err != nil {
			c.errorf("cannot access %s: %s", quote(p), errText(err))
			status = 1
			return
		}
		m, ok := parseMode(spec, st.Mode, st.IsDir(), c.umask())
		if !ok {
			c.usage("invalid mode: %s", quote(spec))
			status = 1
			return
		}
		if err := c.p.Chmod(p, m); err != nil {
			c.errorf("changing permissions of %s: %s", quote(p), errText(err))
			status = 1
		}
		if rec && st.IsDir() {
			ents, _ := readDirents(c.p, p)
			for _, d := range ents {
				walk(path.Join(p, d.Name))
			}
		}
	}
	for _, p := range ops[1:] {
		walk(p)
	}
	return status
}

// parseID reads a user or group: a number, or a name from the
// namespace's /etc/passwd or /etc/group.
func parseID(c *cmd, file, s string) (uint32, bool) {
	if v, err := strconv.ParseUint(s, 10, 32); err == nil {
		return uint32(v), true
	}
	for id := uint32(0); id < 1; id++ {
		if idName(c.p, file, id) == s {
			return id, true
		}
	}
	data, err := c.readFile(file)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) > 2 && f[0] == s {
			v, err := strconv.ParseUint(f[2], 10, 32)
			return uint32(v), err == nil
		}
	}
	return 0, false
}

func (c *cmd) readFile(name string) ([]byte, error) {
	f, err := c.p.OpenFile(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func runChown(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "Rh", map[string]string{"recursive": "R", "no-dereference": "h"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) < 2 {
		if len(ops) == 0 {
			return c.usage("missing operand")
		}
		return c.usage("missing operand after %s", quote(ops[0]))
	}
	u, g, hasG := strings.Cut(ops[0], ":")
	uid, gid := -1, -1
	if u != "" {
		v, ok := parseID(c, "/etc/passwd", u)
		if !ok {
			c.errorf("invalid user: %s", quote(ops[0]))
			return 1
		}
		uid = int(v)
	}
	if hasG && g != "" {
		v, ok := parseID(c, "/etc/group", g)
		if !ok {
			c.errorf("invalid group: %s", quote(ops[0]))
			return 1
		}
		gid = int(v)
	}
	status := 0
	var walk func(p string)
	walk = func(p string) {
		err := c.p.Fchownat(unix.AT_FDCWD, p, uid, gid, map[bool]int{true: unix.AT_SYMLINK_NOFOLLOW}[has(opts, "h")])
		if err != nil {
			if isErrno(err, syscall.ENOENT) {
				c.errorf("cannot access %s: %s", quote(p), errText(err))
			} else {
				c.errorf("changing ownership of %s: %s", quote(p), errText(err))
			}
			status = 1
			return
		}
		if has(opts, "R") && isDirPath(c.p, p) {
			ents, _ := readDirents(c.p, p)
			for _, d := range ents {
				walk(path.Join(p, d.Name))
			}
		}
	}
	for _, p := range ops[1:] {
		walk(p)
	}
	return status
}

func runMkdir(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "pm:v", map[string]string{"parents": "p", "mode=": "m"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		return c.usage("missing operand")
	}
	mode, explicit := uint32(0o777), false
	if m := last(opts, "m"); m != "" {
		v, ok := parseMode(m, 0o777&^c.umask(), true, 0)
		if !ok {
			c.errorf("invalid mode %s", quote(m))
			return 1
		}
		mode, explicit = v, true
	}
	status := 0
	for _, op := range ops {
		if has(opts, "p") {
			parts := strings.Split(op, "/")
			cur := ""
			if strings.HasPrefix(op, "/") {
				cur = "/"
			}
			for i, part := range parts {
				if part == "" {
					continue
				}
				cur = path.Join(cur, part)
				m := uint32(0o777)
				if i == len(parts)-1 || strings.Trim(strings.Join(parts[i+1:], ""), "") == "" {
					m = mode
				}
				err := c.p.Mkdir(cur, m)
				if err != nil && !(isErrno(err, syscall.EEXIST) && isDirPath(c.p, cur)) {
					c.errorf("cannot create directory %s: %s", quote(op), errText(err))
					status = 1
					break
				}
				if err == nil && explicit && m == mode {
					c.p.Chmod(cur, mode)
				}
			}
			continue
		}
		if err := c.p.Mkdir(op, mode); err != nil {
			c.errorf("cannot create directory %s: %s", quote(op), errText(err))
			status = 1
			continue
		}
		if explicit {
			c.p.Chmod(op, mode)
		}
	}
	return status
}

func runRmdir(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "pv", map[string]string{"parents": "p"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		return c.usage("missing operand")
	}
	status := 0
	for _, op := range ops {
		for p := op; ; {
			if err := c.p.Rmdir(p); err != nil {
				c.errorf("failed to remove %s: %s", quote(p), errText(err))
				status = 1
				break
			}
			if !has(opts, "p") {
				break
			}
			p = path.Dir(p)
			if p == "." || p == "/" {
				break
			}
		}
	}
	return status
}

func runLn(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "sfnv", map[string]string{"symbolic": "s", "force": "f"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		return c.usage("missing file operand")
	}
	if len(ops) == 1 {
		ops = append(ops, baseName(ops[0]))
	}
	dst := ops[len(ops)-1]
	srcs := ops[:len(ops)-1]
	dstDir := isDirPath(c.p, dst)
	if len(srcs) > 1 && !dstDir {
		c.errorf("target %s is not a directory", quote(dst))
		return 1
	}
	kind := "hard link"
	if has(opts, "s") {
		kind = "symbolic link"
	}
	status := 0
	for _, src := range srcs {
		to := dst
		if dstDir {
			to = path.Join(dst, baseName(src))
		}
		if has(opts, "f") {
			if st, err := c.p.Lstat(to); err == nil && !st.IsDir() {
				c.p.Unlink(to)
			}
		}
		var err error
		if has(opts, "s") {
			err = c.p.Symlink(src, to)
		} else {
			err = c.p.Link(src, to)
		}
		if err != nil {
			if !has(opts, "s") && isErrno(err, syscall.ENOENT) {
				if _, serr := c.p.Lstat(src); serr != nil {
					c.errorf("failed to access %s: %s", quote(src), errText(serr))
					status = 1
					continue
				}
			}
			c.errorf("failed to create %s %s: %s", kind, quote(to), errText(err))
			status = 1
		}
	}
	return status
}

// parseDate reads touch -d's date: @SECONDS, RFC 3339, "YYYY-MM-DD
// HH:MM[:SS[.frac]]" or "YYYY-MM-DD", in local time.
func parseDate(s string) (time.Time, bool) {
	if strings.HasPrefix(s, "@") {
		f, err := strconv.ParseFloat(s[1:], 64)
		if err != nil {
			return time.Time{}, false
		}
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)), true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func runTouch(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "d:cam", map[string]string{"date=": "d", "no-create": "c"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		return c.usage("missing file operand")
	}
	t := time.Now()
	if d := last(opts, "d"); d != "" {
		var ok bool
		if t, ok = parseDate(d); !ok {
			c.errorf("invalid date format %s", quote(d))
			return 1
		}
	}
	status := 0
	for _, op := range ops {
		if _, err := c.p.Stat(op); err != nil {
			if has(opts, "c") {
				continue
			}
			fd, err := c.p.Open(op, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, 0o666)
			if err != nil {
				c.errorf("cannot touch %s: %s", quote(op), errText(err))
				status = 1
				continue
			}
			c.p.Close(fd)
		}
		if err := c.p.Utimes(op, t, t); err != nil {
			c.errorf("setting times of %s: %s", quote(op), errText(err))
			status = 1
		}
	}
	return status
}

// canonicalize resolves every symlink of name, as readlink -f does: all
// components but the last must exist.
func (c *cmd) canonicalize(name string) (string, error) {
	parts := strings.Split(c.abs(name), "/")
	cur := "/"
	for hops, i := 0, 0; i < len(parts); i++ {
		part := parts[i]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, part)
		st, err := c.p.Lstat(next)
		if err != nil {
			if i == len(parts)-1 && isErrno(err, syscall.ENOENT) {
				return next, nil
			}
			return "", err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if hops++; hops > 40 {
				return "", syscall.ELOOP
			}
			t, err := c.p.Readlink(next)
			if err != nil {
				return "", err
			}
			if path.IsAbs(t) {
				cur = "/"
			}
			parts = append(strings.Split(t, "/"), parts[i+1:]...)
			i = -1
			continue
		}
		if i < len(parts)-1 && !st.IsDir() {
			return "", syscall.ENOTDIR
		}
		cur = next
	}
	return cur, nil
}

func runReadlink(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "fenqsv", map[string]string{"canonicalize": "f", "no-newline": "n"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		return c.usage("missing operand")
	}
	status := 0
	for _, op := range ops {
		var t string
		var err error
		if has(opts, "f") || has(opts, "e") {
			t, err = c.canonicalize(op)
			if err == nil && has(opts, "e") {
				_, err = c.p.Stat(t)
			}
		} else {
			t, err = c.p.Readlink(op)
		}
		if err != nil {
			if has(opts, "v") {
				c.errorf("%s: %s", op, errText(err))
			}
			status = 1
			continue
		}
		fmt.Fprint(c.out, t)
		if !has(opts, "n") {
			fmt.Fprintln(c.out)
		}
	}
	return status
}

// parseSize reads truncate's and dd's sizes: a number with K, M, G, T
// (1024) or KB, MB, GB (1000) or c, w, b (dd's 1, 2, 512).
func parseSize(s string) (int64, bool) {
	mults := []struct {
		suf string
		m   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1000}, {"kB", 1000}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"k", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
		{"c", 1}, {"w", 2}, {"b", 512}}
	m := int64(1)
	for _, x := range mults {
		if strings.HasSuffix(s, x.suf) && len(s) > len(x.suf) {
			s, m = strings.TrimSuffix(s, x.suf), x.m
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64/m {
		return 0, false
	}
	return v * m, true
}

func runTruncate(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "s:co", map[string]string{"size=": "s", "no-create": "c"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	spec := last(opts, "s")
	if spec == "" {
		return c.usage("you must specify either '--size' or '--reference'")
	}
	if len(ops) == 0 {
		return c.usage("missing file operand")
	}
	rel := byte(0)
	if strings.IndexByte("+-<>/%", spec[0]) >= 0 {
		rel, spec = spec[0], spec[1:]
	}
	size, ok := parseSize(spec)
	if !ok {
		c.errorf("Invalid number: %s", quote(last(opts, "s")))
		return 1
	}
	status := 0
	for _, op := range ops {
		flags := unix.O_WRONLY | unix.O_CREAT | unix.O_NONBLOCK
		if has(opts, "c") {
			flags &^= unix.O_CREAT
		}
		fd, err := c.p.Open(op, flags, 0o666)
		if err != nil {
			if has(opts, "c") && isErrno(err, syscall.ENOENT) {
				continue
			}
			c.errorf("cannot open %s for writing: %s", quote(op), errText(err))
			status = 1
			continue
		}
		c.sh.track(fd)
		st, _ := c.p.Fstat(fd)
		n := size
		switch rel {
		case '+':
			n = st.Size + size
		case '-':
			n = max(st.Size-size, 0)
		case '<':
			n = min(st.Size, size)
		case '>':
			n = max(st.Size, size)
		}
		if err := c.p.Ftruncate(fd, n); err != nil {
			c.errorf("failed to truncate %s at %d bytes: %s", quote(op), n, errText(err))
			status = 1
		}
		c.p.Close(fd)
	}
	return status
}

func runMkfifo(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "m:", map[string]string{"mode=": "m"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		return c.usage("missing operand")
	}
	mode := uint32(0o666)
	if m := last(opts, "m"); m != "" {
		v, ok := parseMode(m, 0o666, false, 0)
		if !ok {
			c.errorf("invalid mode")
			return 1
		}
		mode = v
	}
	status := 0
	for _, op := range ops {
		if err := c.p.Mknod(op, unix.S_IFIFO|mode, 0); err != nil {
			c.errorf("cannot create fifo %s: %s", quote(op), errText(err))
			status = 1
			continue
		}
		if has(opts, "m") {
			c.p.Chmod(op, mode)
		}
	}
	return status
}

func runStat(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "L", map[string]string{"dereference": "L"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		return c.usage("missing operand")
	}
	status := 0
	for _, op := range ops {
		var st vfs.Stat
		var err error
		if has(opts, "L") {
			st, err = c.p.Stat(op)
		} else {
			st, err = c.p.Lstat(op)
		}
		if err != nil {
			c.errorf("cannot statx %s: %s", quote(op), errText(err))
			status = 1
			continue
		}
		fmt.Fprint(c.out, statText(c.p, op, st))
	}
	return status
}

// statText is GNU stat's default output (Birth is "-": the VFS's stat
// has no birth time).
func statText(p *vfs.Proc, name string, st vfs.Stat) string {
	var b strings.Builder
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		t, _ := p.Readlink(name)
		fmt.Fprintf(&b, "  File: %s -> %s\n", name, t)
	} else {
		fmt.Fprintf(&b, "  File: %s\n", name)
	}
	fmt.Fprintf(&b, "  Size: %-10d\tBlocks: %-10d IO Block: %-6d %s\n", st.Size, st.Blocks, st.Blksize, fileType(st))
	dev := fmt.Sprintf("%d,%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	if t := st.Mode & unix.S_IFMT; t == unix.S_IFCHR || t == unix.S_IFBLK {
		fmt.Fprintf(&b, "Device: %s\tInode: %-11d Links: %-5d Device type: %d,%d\n", dev, st.Ino, st.Nlink, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	} else {
		fmt.Fprintf(&b, "Device: %s\tInode: %-11d Links: %d\n", dev, st.Ino, st.Nlink)
	}
	fmt.Fprintf(&b, "Access: (%04o/%s)  Uid: (%5d/%8s)   Gid: (%5d/%8s)\n", st.Mode&0o7777, modeString(st.Mode),
		st.Uid, statName(p, "/etc/passwd", st.Uid), st.Gid, statName(p, "/etc/group", st.Gid))
	tf := "2006-01-02 15:04:05.000000000 -0700"
	fmt.Fprintf(&b, "Access: %s\nModify: %s\nChange: %s\n Birth: -\n", st.Atime.Local().Format(tf), st.Mtime.Local().Format(tf), st.Ctime.Local().Format(tf))
	return b.String()
}
