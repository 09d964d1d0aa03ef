package vfs

import (
	"errors"
	"io"
	"io/fs"
)

// File is a Go handle on a file descriptor of a Proc, like *os.File. Its
// methods follow Go's io contracts, not the raw descriptor API's: Read
// returns io.EOF at end of file, ReadAt returns a non-nil error whenever
// n < len(p), and Write returns an error whenever n < len(p). Errors other
// than io.EOF are *fs.PathError values naming the file.
type File struct {
	p    *Proc
	fd   int
	name string
}

// NewFile returns a handle on fd, which stays owned by the handle: Close
// closes it. name is used in error messages.
func (p *Proc) NewFile(fd int, name string) *File {
	return &File{p: p, fd: fd, name: name}
}

// OpenFile opens path as Open does and returns a handle on the descriptor.
func (p *Proc) OpenFile(path string, flags int, perm uint32) (*File, error) {
	fd, err := p.Open(path, flags, perm)
	if err != nil {
		return nil, err
	}
	return p.NewFile(fd, path), nil
}

// Fd returns the descriptor the handle uses.
func (f *File) Fd() int { return f.fd }

// Name returns the name given at open.
func (f *File) Name() string { return f.name }

func (f *File) wrap(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// Read implements io.Reader: it reads up to len(p) bytes at the file
// position. At end of file it returns 0, io.EOF.
func (f *File) Read(b []byte) (int, error) {
	n, err := f.p.Read(f.fd, b)
	if err != nil {
		return n, f.wrap("read", err)
	}
	if n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// ReadAt implements io.ReaderAt: it reads len(p) bytes at off, retrying
// short reads, and returns io.EOF if the file ends first. The file
// position is not used.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		n, err := f.p.Pread(f.fd, b[done:], off+int64(done))
		if err != nil {
			return done, f.wrap("read", err)
		}
		if n == 0 {
			return done, io.EOF
		}
		done += n
	}
	return done, nil
}

// Write implements io.Writer: it writes all of p at the file position,
// retrying short writes, and returns an error if it cannot.
func (f *File) Write(b []byte) (int, error) {
	done := 0
	for { // at least once, so an empty write reaches the driver, as in os.File
		n, err := f.p.Write(f.fd, b[done:])
		done += n
		if err != nil {
			return done, f.wrap("write", err)
		}
		if done == len(b) {
			return done, nil
		}
		if n == 0 {
			return done, f.wrap("write", io.ErrShortWrite)
		}
	}
}

// WriteAt implements io.WriterAt: it writes all of p at off. Like
// os.File.WriteAt, it refuses files opened with O_APPEND, where pwrite
// would append instead.
func (f *File) WriteAt(b []byte, off int64) (int, error) {
	if fl := f.p.files.get(f.fd); fl != nil && fl.appending() {
		return 0, f.wrap("writeat", errors.New("invalid use of WriteAt on file opened with O_APPEND"))
	}
	done := 0
	for done < len(b) {
		n, err := f.p.Pwrite(f.fd, b[done:], off+int64(done))
		if err != nil {
			return done, f.wrap("write", err)
		}
		if n == 0 {
			return done, f.wrap("write", io.ErrShortWrite)
		}
		done += n
	}
	return done, nil
}

// Seek implements io.Seeker with io.SeekStart, io.SeekCurrent and
// io.SeekEnd, which equal unix.SEEK_SET, SEEK_CUR and SEEK_END.
func (f *File) Seek(off int64, whence int) (int64, error) {
	pos, err := f.p.Seek(f.fd, off, whence)
	if err != nil {
		return 0, f.wrap("seek", err)
	}
	return pos, nil
}

// Stat returns the file's metadata.
func (f *File) Stat() (Stat, error) {
	st, err := f.p.Fstat(f.fd)
	if err != nil {
		return st, f.wrap("stat", err)
	}
	return st, nil
}

// Close implements io.Closer: it closes the descriptor. A second Close
// returns an error wrapping EBADF.
func (f *File) Close() error {
	if err := f.p.Close(f.fd); err != nil {
		return f.wrap("close", err)
	}
	return nil
}
