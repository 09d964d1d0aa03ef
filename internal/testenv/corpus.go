package testenv

import (
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// OpenCorpusImage opens the image of one e2fsprogs test directory (its
// image.gz or image.bz2) and returns a reader of the decompressed bytes;
// os.ErrNotExist when it has neither. The host's gzip or bzip2 does the
// work when there is one: the tests load the whole corpus (1.3 GB
// decompressed) several times, and Go's decompressors run ten times slower
// under the race detector, which has nothing to find in them; Go's own
// otherwise. Close reports a decompressor that failed, unless the caller
// stopped reading early.
func OpenCorpusImage(dir string) (io.ReadCloser, error) {
	for _, c := range []struct{ name, tool string }{{"image.gz", "gzip"}, {"image.bz2", "bzip2"}} {
		path := filepath.Join(dir, c.name)
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if tool, err := exec.LookPath(c.tool); err == nil {
			cmd := exec.Command(tool, "-dc")
			cmd.Stdin = f
			out, err := cmd.StdoutPipe()
			if err == nil {
				err = cmd.Start()
			}
			if err != nil {
				f.Close()
				return nil, err
			}
			return &toolReader{r: out, cmd: cmd, f: f, path: path}, nil
		}
		var r io.Reader
		if c.tool == "gzip" {
			if r, err = gzip.NewReader(f); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		} else {
			r = bzip2.NewReader(f)
		}
		return struct {
			io.Reader
			io.Closer
		}{r, f}, nil
	}
	return nil, os.ErrNotExist
}

// toolReader reads a decompressor's output.
type toolReader struct {
	r    io.Reader
	cmd  *exec.Cmd
	f    *os.File
	path string
	eof  bool // the output was read to its end
}

func (t *toolReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err == io.EOF {
		t.eof = true
	}
	return n, err
}

func (t *toolReader) Close() error {
	defer t.f.Close()
	if !t.eof {
		t.cmd.Process.Kill() // stopped early: the tool's exit status says nothing
		t.cmd.Wait()
		return nil
	}
	if err := t.cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %s: %w", t.path, filepath.Base(t.cmd.Path), err)
	}
	return nil
}
