package vfs

// io.Copy at the floor: File implements io.WriterTo and io.ReaderFrom, so
// that io.Copy between two iovfs files moves the bytes as splice,
// sendfile and copy_file_range do (a pipe's buffers by reference, a
// file's pages into a pipe by reference, file to file with one copy),
// and a copy between an iovfs file and other Go code goes through one
// buffer at most.

import (
	"io"
	"io/fs"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/pipe"
)

var (
	_ io.WriterTo   = (*File)(nil)
	_ io.ReaderFrom = (*File)(nil)
)

// WriteTo implements io.WriterTo: it reads f from its file position to
// the end and writes the bytes to w, returning the count written. To
// another File it moves them as splice does: buffers of a pipe move to
// the other side, pages of a file are queued into a pipe by reference,
// and one file is copied into another with one copy of each byte. To
// any other writer, a tmpfs file hands w its pages to copy from (w must
// not keep or change them, as io.Writer says), and other files go
// through one pooled buffer. A pipe's end of file is its last writer
// closing; a blocking pipe waits as Read does.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	if dst, ok := w.(*File); ok {
		if n, ok, err := copyFiles(f, dst, -1); ok {
			return n, err
		}
	}
	src := f.p.fdget(f.fd)
	if src == nil {
		return 0, f.wrap("read", errEBADF)
	}
	if sr, ok := src.h.(SpliceReader); ok && src.readable() && src.mode&fmNoPos == 0 {
		return f.writePages(src, sr, w)
	}
	return copyBuffer(w, f)
}

// ReadFrom implements io.ReaderFrom: it writes what r reads, to its end,
// at f's file position, and returns the count. From another File (or an
// io.LimitedReader of one, as io.CopyN makes) it moves the bytes as
// WriteTo does; from other readers through one pooled buffer.
func (f *File) ReadFrom(r io.Reader) (int64, error) {
	limit := int64(-1)
	src := r
	if lr, ok := r.(*io.LimitedReader); ok {
		src, limit = lr.R, lr.N
	}
	if sf, ok := src.(*File); ok {
		n, ok, err := copyFiles(sf, f, limit)
		if ok {
			if limit >= 0 {
				r.(*io.LimitedReader).N -= n
			}
			return n, err
		}
	}
	return copyBuffer(f, r)
}

// copyFiles copies from src to dst at their positions until src ends or
// limit bytes (limit < 0: no limit) have moved. ok is false when the
// pair cannot be spliced (an O_APPEND destination, a source splice cannot
// read, a descriptor gone): the caller then copies through a buffer.
func copyFiles(src, dst *File, limit int64) (n int64, ok bool, err error) {
	in := src.p.spliceFile(src.fd)
	if in == nil {
		return 0, false, nil
	}
	defer in.release()
	out := dst.p.spliceFile(dst.fd)
	if out == nil {
		return 0, false, nil
	}
	defer out.release()
	if !in.readable() || !out.writable() || out.appending() {
		return 0, false, nil
	}
	ipipe, opipe := pipeOf(in), pipeOf(out)
	if ipipe != nil && opipe != nil && ipipe.obj == opipe.obj {
		return 0, false, nil
	}
	if ipipe == nil {
		if _, no := in.h.(NoSpliceReader); no || in.rd == nil && in.ird == nil {
			return 0, false, nil
		}
	}
	if opipe == nil {
		if _, no := out.h.(NoSpliceWriter); no || out.wr == nil && out.iwr == nil {
			return 0, false, nil
		}
	}
	for limit < 0 || n < limit {
		want := iov.MaxCount
		if limit >= 0 {
			want = int(min(limit-n, iov.MaxCount))
		}
		var k int
		switch {
		case ipipe != nil && opipe != nil:
			k, err = pipe.Splice(ipipe.p, opipe.p, want, in.nonblock() || out.nonblock())
		case ipipe != nil:
			pos := out.getPos()
			k, err = dst.p.spliceWrite(ipipe, out, driverOff(out, nil, pos), uint64(want), in.nonblock())
			setPos(out, nil, out.advance(pos, k))
		case opipe != nil:
			pos := in.getPos()
			k, err = spliceToPipe(in, pos, driverOff(in, nil, pos), opipe, uint64(want), out.nonblock())
			setPos(in, nil, in.advance(pos, k))
		default:
			ipos, opos := in.getPos(), out.getPos()
			k, err = dst.p.spliceDirect(in, ipos, driverOff(in, nil, ipos) == noOffset, out, opos, driverOff(out, nil, opos) == noOffset, want)
			setPos(in, nil, in.advance(ipos, k))
			setPos(out, nil, out.advance(opos, k))
		}
		n += int64(k)
		if err != nil {
			return n, true, &fs.PathError{Op: "copy", Path: src.name, Err: err}
		}
		if k == 0 {
			break
		}
	}
	return n, true, nil
}

// writePages is WriteTo for a file whose pages can be lent: w copies
// straight from them.
func (f *File) writePages(src *file, sr SpliceReader, w io.Writer) (int64, error) {
	var n int64
	for {
		pos := src.getPos()
		b, err := sr.SplicePage(pos, iov.MaxCount)
		if err != nil {
			return n, f.wrap("read", err)
		}
		if len(b) == 0 {
			return n, nil
		}
		k, err := w.Write(b)
		n += int64(k)
		setPos(src, nil, pos+int64(k))
		if err != nil {
			return n, err
		}
		if k < len(b) {
			return n, io.ErrShortWrite
		}
	}
}

// copyBuffer is io.Copy's loop over one pooled buffer: io.EOF from the
// reader ends the copy without an error.
func copyBuffer(w io.Writer, r io.Reader) (int64, error) {
	buf := copyBufs.Get().(*[copyBufSize]byte)
	defer copyBufs.Put(buf)
	var n int64
	for {
		k, rerr := r.Read(buf[:])
		if k > 0 {
			m, werr := w.Write(buf[:k])
			n += int64(m)
			if werr != nil {
				return n, werr
			}
			if m < k {
				return n, io.ErrShortWrite
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}
