package shell

import (
	"io"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "cat", summary: "concatenate files to standard output", run: runCat,
		options: []option{{short: 'u', help: "accepted (output is never buffered)"}}})
}

// openIn opens an operand for reading: "-" is standard input. The closer
// is nil for standard input.
func (c *cmd) openIn(name string) (io.Reader, func(), error) {
	if name == "-" {
		return c.in, func() {}, nil
	}
	fd, err := c.p.Open(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	f := c.p.NewFile(fd, name)
	return f, func() { f.Close() }, nil
}

// copyOut copies r to standard output until end of file, cancellation or
// a closed pipe. It returns the read error, if any.
func (c *cmd) copyOut(r io.Reader) (rerr error, werr error) {
	lr, limited := r.(*io.LimitedReader)
	if limited {
		r = lr.R
	}
	if dst, src := c.outFile(), vfsFile(r); dst != nil && src != nil {
		// Between two iovfs files the bytes move as splice moves them
		// (vfs.File.ReadFrom), a piece at a time so that a stop is seen.
		for !c.stopped() {
			piece := int64(4 << 20)
			if limited {
				piece = min(piece, lr.N)
			}
			n, err := io.CopyN(dst, src, piece)
			if limited {
				lr.N -= n
			}
			switch {
			case err == io.EOF || err == nil && (n < piece || limited && lr.N == 0):
				return nil, nil
			case isErrno(err, unix.EPIPE):
				c.sigpipe = true
				return nil, err
			case err != nil:
				return err, nil
			}
		}
		return nil, nil
	}
	if limited {
		r = lr
	}
	buf := make([]byte, 64<<10)
	for !c.stopped() {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := c.out.Write(buf[:n]); werr != nil {
				return nil, werr
			}
		}
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return err, nil
		}
	}
	return nil, nil
}

func runCat(c *cmd, _ flags, ops []string) int {
	if len(ops) == 0 {
		ops = []string{"-"}
	}
	status := 0
	for _, op := range ops {
		r, done, err := c.openIn(op)
		if err != nil {
			c.errorf("%s: %s", quotef(op), errText(err))
			status = 1
			continue
		}
		rerr, werr := c.copyOut(r)
		done()
		if werr != nil {
			if !c.sigpipe {
				c.errorf("write error: %s", errText(werr))
			}
			return 1
		}
		if rerr != nil {
			c.errorf("%s: %s", quotef(op), errText(rerr))
			status = 1
		}
		if c.stopped() {
			return 1
		}
	}
	return status
}

// outFile is the command's standard output when it is a file of an iovfs
// process (a pipe, a redirection), for the copies that splice.
func (c *cmd) outFile() *vfs.File {
	w := c.out
	if cw, ok := w.(*cmdWriter); ok {
		w = cw.w
	}
	if pf, ok := w.(*procFile); ok {
		return pf.f
	}
	return nil
}

// vfsFile is r when it is a file of an iovfs process.
func vfsFile(r io.Reader) *vfs.File {
	switch f := r.(type) {
	case *vfs.File:
		return f
	case *procFile:
		return f.f
	}
	return nil
}
