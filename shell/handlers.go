package shell

// The interpreter's file handlers: every file the interpreter opens
// (redirections, here-strings aside), stats (cd, test, [[ -e ]]) or lists
// (globs) is an operation of the process the running code belongs to.

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/interp"
)

// abs makes name absolute against the interpreter's directory.
func abs(dir, name string) string {
	if path.IsAbs(name) {
		return name
	}
	return path.Join(dir, name)
}

// shError is an *os.PathError that prints as bash prints a failed
// redirection: "iovfs sh: PATH: strerror".
func shError(name string, err error) error {
	return &os.PathError{Op: "iovfs sh:", Path: name, Err: errnoText{err}}
}

// errnoText prints an errno with strerror's capital letter and keeps it
// reachable for errors.Is.
type errnoText struct{ err error }

func (e errnoText) Error() string { return errText(e.err) }
func (e errnoText) Unwrap() error { return e.err }

func (s *Shell) open(ctx context.Context, name string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	p := s.procFrom(ctx)
	full := abs(hc.Dir, name)
	fd, err := p.Open(full, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil, shError(name, err)
	}
	return &procFile{p, p.NewFile(fd, name)}, nil
}

func (s *Shell) stat(ctx context.Context, name string, follow bool) (fs.FileInfo, error) {
	hc := interp.HandlerCtx(ctx)
	p := s.procFrom(ctx)
	full := abs(hc.Dir, name)
	var st vfs.Stat
	var err error
	if follow {
		st, err = p.Stat(full)
	} else {
		st, err = p.Lstat(full)
	}
	if err != nil {
		return nil, err
	}
	return fileInfo{path.Base(full), st}, nil
}

func (s *Shell) access(ctx context.Context, name string, mode interp.AccessMode) error {
	hc := interp.HandlerCtx(ctx)
	return s.procFrom(ctx).Access(abs(hc.Dir, name), uint32(mode))
}

func (s *Shell) readDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	hc := interp.HandlerCtx(ctx)
	p := s.procFrom(ctx)
	full := abs(hc.Dir, name)
	ents, err := readDirents(p, full)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, 0, len(ents))
	for _, d := range ents {
		out = append(out, dirEntry{p: p, dir: full, d: d})
	}
	return out, nil
}

// readDirents lists dir without "." and "..", in the file system's order.
func readDirents(p *vfs.Proc, dir string) ([]vfs.Dirent, error) {
	fd, err := p.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer p.Close(fd)
	var out []vfs.Dirent
	for {
		ds, err := p.Getdents(fd)
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if len(ds) == 0 {
			return out, nil
		}
		for _, d := range ds {
			if d.Name != "." && d.Name != ".." {
				out = append(out, d)
			}
		}
	}
}

// fileInfo is a vfs.Stat as an fs.FileInfo; Sys returns *vfs.Stat.
type fileInfo struct {
	name string
	st   vfs.Stat
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.st.Size }
func (fi fileInfo) Mode() fs.FileMode  { return goMode(fi.st.Mode) }
func (fi fileInfo) ModTime() time.Time { return fi.st.Mtime }
func (fi fileInfo) IsDir() bool        { return fi.st.IsDir() }
func (fi fileInfo) Sys() any           { return &fi.st }

// goMode converts Linux st_mode bits to an fs.FileMode.
func goMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// dirEntry is a vfs.Dirent as an fs.DirEntry; Info stats it lazily.
type dirEntry struct {
	p   *vfs.Proc
	dir string
	d   vfs.Dirent
}

func (e dirEntry) Name() string { return e.d.Name }
func (e dirEntry) IsDir() bool  { return e.d.Type == unix.DT_DIR }
func (e dirEntry) Type() fs.FileMode {
	return goMode(uint32(e.d.Type)<<12) & fs.ModeType
}
func (e dirEntry) Info() (fs.FileInfo, error) {
	st, err := e.p.Lstat(path.Join(e.dir, e.d.Name))
	if err != nil {
		return nil, err
	}
	return fileInfo{e.d.Name, st}, nil
}

// isErrno reports whether err is errno e.
func isErrno(err error, e syscall.Errno) bool {
	for err != nil {
		if x, ok := err.(syscall.Errno); ok {
			return x == e
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
