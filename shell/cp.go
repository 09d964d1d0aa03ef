package shell

import (
	"path"
	"syscall"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "cp", summary: "copy files and directories (-r -a -p; holes stay holes)",
		synopsis: "[OPTION]... SOURCE... DEST", minOps: 1, missing: "missing file operand", run: runCp,
		options: []option{
			{short: 'r', long: "recursive", help: "copy directories recursively"},
			{short: 'R', key: "r", help: "same as -r"},
			{short: 'a', long: "archive", help: "same as -dR --preserve=all (mode, owner, times, links, xattrs)"},
			{short: 'p', help: "keep mode, owner and times"},
			{short: 'd', long: "no-dereference", help: "copy symbolic links as links"},
			{short: 'f', long: "force", help: "accepted: destinations are overwritten anyway"},
			{short: 'v', long: "verbose", help: "accepted"},
		}})
	register(&builtin{name: "mv", summary: "move or rename files",
		synopsis: "[OPTION]... SOURCE... DEST", minOps: 1, missing: "missing file operand", run: runMv,
		options: []option{
			{short: 'f', long: "force", help: "accepted: destinations are overwritten anyway"},
			{short: 'i', long: "interactive", help: "accepted"},
			{short: 'v', long: "verbose", help: "accepted"},
		}})
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

func runCp(c *cmd, f flags, ops []string) int {
	s := &cpState{recursive: f.has("r") || f.has("a"), xattrs: f.has("a"),
		preserve: f.has("a") || f.has("p"), links: f.has("a") || f.has("d"),
		inodes: map[[2]uint64]string{}}
	s.noDeref = s.links || s.recursive
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
	defer c.p.Close(in)
	out, err := c.p.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, st.Mode&0o777)
	if err != nil {
		c.errorf("cannot create regular file %s: %s", quote(dst), errText(err))
		return err
	}
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

func runMv(c *cmd, _ flags, ops []string) int {
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
