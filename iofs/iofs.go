// Package iofs is the io/fs view of an iovfs namespace: a directory tree
// of a *vfs.Proc as an fs.FS, with ReadDirFS, ReadFileFS, StatFS and
// ReadLinkFS, for code that takes an fs.FS (text/template, http.FileServer,
// fstest).
//
// Names are fs.ValidPath names relative to the root given to New. Errors
// are *fs.PathError values naming that relative path and wrapping the
// syscall.Errno, so errors.Is(err, fs.ErrNotExist) works. Symbolic links
// are followed by Open, Stat, ReadFile and ReadDir, as os.DirFS does; Lstat
// and ReadLink do not follow a final link.
package iofs

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// FS is a directory of a process's namespace seen through io/fs.
type FS struct {
	p    *vfs.Proc
	root string
}

var (
	_ fs.FS         = (*FS)(nil)
	_ fs.ReadDirFS  = (*FS)(nil)
	_ fs.ReadFileFS = (*FS)(nil)
	_ fs.StatFS     = (*FS)(nil)
	_ fs.ReadLinkFS = (*FS)(nil)
)

// New returns the tree at root (an absolute path in p's namespace) as an
// fs.FS. Every call resolves names afresh, so later mounts and changes
// show through.
func New(p *vfs.Proc, root string) *FS {
	return &FS{p: p, root: path.Clean("/" + root)}
}

// full turns a valid fs name into a namespace path, or reports ErrInvalid.
func (f *FS) full(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return f.root, nil
	}
	return path.Join(f.root, name), nil
}

// wrap rewrites an error from vfs to name the fs path instead of the
// namespace path.
func wrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		err = errno
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Open opens the named file for reading.
func (f *FS) Open(name string) (fs.File, error) {
	full, err := f.full("open", name)
	if err != nil {
		return nil, err
	}
	fd, err := f.p.Open(full, unix.O_RDONLY, 0)
	if err != nil {
		return nil, wrap("open", name, err)
	}
	return &File{h: f.p.NewFile(fd, full), fs: f, name: name, full: full, fd: fd}, nil
}

// Stat returns the FileInfo of the named file, following symlinks.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	full, err := f.full("stat", name)
	if err != nil {
		return nil, err
	}
	st, err := f.p.Stat(full)
	if err != nil {
		return nil, wrap("stat", name, err)
	}
	return newInfo(path.Base(name), st), nil
}

// Lstat is Stat without following a final symlink.
func (f *FS) Lstat(name string) (fs.FileInfo, error) {
	full, err := f.full("lstat", name)
	if err != nil {
		return nil, err
	}
	st, err := f.p.Lstat(full)
	if err != nil {
		return nil, wrap("lstat", name, err)
	}
	return newInfo(path.Base(name), st), nil
}

// ReadLink returns the target of the named symbolic link.
func (f *FS) ReadLink(name string) (string, error) {
	full, err := f.full("readlink", name)
	if err != nil {
		return "", err
	}
	s, err := f.p.Readlink(full)
	if err != nil {
		return "", wrap("readlink", name, err)
	}
	return s, nil
}

// ReadFile reads the whole named file.
func (f *FS) ReadFile(name string) ([]byte, error) {
	file, err := f.Open(name)
	if err != nil {
		return nil, wrap("readfile", name, err)
	}
	defer file.Close()
	ff := file.(*File)
	st, err := f.p.Fstat(ff.fd)
	if err != nil {
		return nil, wrap("readfile", name, err)
	}
	if st.IsDir() {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: syscall.EISDIR}
	}
	buf := make([]byte, 0, max(st.Size, 512))
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := f.p.Read(ff.fd, buf[len(buf):cap(buf)])
		if err != nil {
			return nil, wrap("readfile", name, err)
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// ReadDir reads the named directory and returns its entries sorted by
// name, without "." and "..".
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	file, err := f.Open(name)
	if err != nil {
		return nil, wrap("readdir", name, err)
	}
	defer file.Close()
	ff := file.(*File)
	ents, err := ff.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// File is an open file of an FS. It implements fs.File, fs.ReadDirFile,
// io.ReaderAt and io.Seeker.
type File struct {
	h    *vfs.File
	fs   *FS
	name string
	full string
	fd   int
	// pending holds directory entries read but not yet returned.
	pending []vfs.Dirent
	dirEOF  bool
}

// Stat returns the file's FileInfo.
func (f *File) Stat() (fs.FileInfo, error) {
	st, err := f.fs.p.Fstat(f.fd)
	if err != nil {
		return nil, wrap("stat", f.name, err)
	}
	return newInfo(path.Base(f.name), st), nil
}

// Read implements io.Reader.
func (f *File) Read(b []byte) (int, error) {
	n, err := f.h.Read(b)
	if err != nil && err != io.EOF {
		return n, wrap("read", f.name, err)
	}
	return n, err
}

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.h.ReadAt(b, off)
	if err != nil && err != io.EOF {
		return n, wrap("read", f.name, err)
	}
	return n, err
}

// Seek implements io.Seeker.
func (f *File) Seek(off int64, whence int) (int64, error) {
	pos, err := f.h.Seek(off, whence)
	if err != nil {
		return 0, wrap("seek", f.name, err)
	}
	if pos == 0 {
		f.pending, f.dirEOF = nil, false
	}
	return pos, nil
}

// Close closes the file.
func (f *File) Close() error {
	if err := f.fs.p.Close(f.fd); err != nil {
		return wrap("close", f.name, err)
	}
	return nil
}

// ReadDir implements fs.ReadDirFile: with n > 0 it returns at most n
// entries and io.EOF at the end; with n <= 0 all remaining entries.
func (f *File) ReadDir(n int) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	for n <= 0 || len(out) < n {
		if len(f.pending) == 0 {
			if f.dirEOF {
				break
			}
			ents, err := f.fs.p.Getdents(f.fd)
			if err != nil {
				return out, wrap("readdir", f.name, err)
			}
			if len(ents) == 0 {
				f.dirEOF = true
				break
			}
			f.pending = ents
		}
		d := f.pending[0]
		f.pending = f.pending[1:]
		if d.Name == "." || d.Name == ".." {
			continue
		}
		out = append(out, &dirEntry{fs: f.fs, dir: f.full, d: d})
	}
	if n > 0 && len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
}

// dirEntry is an fs.DirEntry; Info stats the entry without following it.
type dirEntry struct {
	fs  *FS
	dir string
	d   vfs.Dirent
}

func (e *dirEntry) Name() string { return e.d.Name }
func (e *dirEntry) IsDir() bool  { return e.d.Type == unix.DT_DIR }
func (e *dirEntry) Type() fs.FileMode {
	return typeBits(dtToMode(e.d.Type))
}
func (e *dirEntry) Info() (fs.FileInfo, error) {
	st, err := e.fs.p.Lstat(path.Join(e.dir, e.d.Name))
	if err != nil {
		return nil, wrap("lstat", e.d.Name, err)
	}
	return newInfo(e.d.Name, st), nil
}
func (e *dirEntry) String() string { return fs.FormatDirEntry(e) }

func dtToMode(t uint8) uint32 {
	switch t {
	case unix.DT_DIR:
		return unix.S_IFDIR
	case unix.DT_LNK:
		return unix.S_IFLNK
	case unix.DT_CHR:
		return unix.S_IFCHR
	case unix.DT_BLK:
		return unix.S_IFBLK
	case unix.DT_FIFO:
		return unix.S_IFIFO
	case unix.DT_SOCK:
		return unix.S_IFSOCK
	}
	return unix.S_IFREG
}

// typeBits converts Linux file type bits to fs.FileMode type bits.
func typeBits(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	}
	return 0
}

// info is an fs.FileInfo over a vfs.Stat; Sys returns the *vfs.Stat.
type info struct {
	name string
	st   vfs.Stat
}

func newInfo(name string, st vfs.Stat) *info { return &info{name: name, st: st} }

func (i *info) Name() string       { return i.name }
func (i *info) Size() int64        { return i.st.Size }
func (i *info) ModTime() time.Time { return i.st.Mtime }
func (i *info) IsDir() bool        { return i.st.IsDir() }
func (i *info) Sys() any           { return &i.st }
func (i *info) Mode() fs.FileMode {
	m := fs.FileMode(i.st.Mode&0o777) | typeBits(i.st.Mode)
	if i.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if i.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if i.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
func (i *info) String() string { return fs.FormatFileInfo(i) }
