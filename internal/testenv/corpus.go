package testenv

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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

// maxImage bounds a decompressed corpus image (the largest is 140 MiB).
const maxImage = 256 << 20

// LoadCorpusImage decompresses dir's image into a buffer of the size
// INDEX.tsv gives (hint), so the peak heap is the image and little more;
// without a hint (0), into a growing buffer of at most 256 MiB.
func LoadCorpusImage(dir string, hint int) ([]byte, error) {
	r, err := OpenCorpusImage(dir)
	if err != nil {
		return nil, err
	}
	b, err := readImage(r, hint)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return b, nil
}

// readImage reads all of r into a buffer of hint bytes, failing if r
// holds more; without a hint (0), into a growing buffer of at most
// maxImage bytes.
func readImage(r io.Reader, hint int) ([]byte, error) {
	if hint <= 0 || hint > maxImage {
		b, err := io.ReadAll(io.LimitReader(r, maxImage+1))
		if len(b) > maxImage {
			return nil, fmt.Errorf("image over %d bytes", maxImage)
		}
		return b, err
	}
	buf := make([]byte, hint+1)
	n, err := io.ReadFull(r, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	if n > hint {
		return nil, fmt.Errorf("image over %d bytes", hint)
	}
	return buf[:n], nil
}

// SetDirHash sets an ext2/3/4 image's default directory hash (half_md4,
// tea, legacy; "" leaves it) and, with unsigned, the unsigned-hash flag,
// with debugfs.
func SetDirHash(t testing.TB, img, hash string, unsigned bool) {
	t.Helper()
	var ssv []string
	if hash != "" {
		ssv = append(ssv, "ssv def_hash_version "+hash)
	}
	if unsigned {
		ssv = append(ssv, "ssv flags 2")
	}
	for _, c := range ssv {
		if out, err := exec.Command("debugfs", "-w", "-R", c, img).CombinedOutput(); err != nil || bytes.Contains(out, []byte("nvalid")) {
			t.Fatalf("debugfs %s: %v\n%s", c, err, out)
		}
	}
}
