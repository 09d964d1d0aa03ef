package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// countSide is the host side, counting the files it opens and the ones
// closed, and failing the open of one name.
type countSide struct {
	hostSide
	opened, closed *atomic.Int32
	fail           string
}

type countFile struct {
	file
	closed *atomic.Int32
}

func (f countFile) Close() error {
	f.closed.Add(1)
	return f.file.Close()
}

func (s countSide) open(path string) (file, error) {
	if filepath.Base(path) == s.fail {
		return nil, syscall.EACCES
	}
	f, err := s.hostSide.open(path)
	if err != nil {
		return nil, err
	}
	s.opened.Add(1)
	return countFile{f, s.closed}, nil
}

// TestReadAhead reads files of sizes around the whole-file limit and
// the batch buffer ahead and checks that next gives them in order, whole
// or (past raWhole) open, with the open error of a file that cannot be
// opened and the status of a name that is no regular file, and that
// every file the reader opened is closed, whether the walk takes them
// all or stops halfway.
func TestReadAhead(t *testing.T) {
	dir := t.TempDir()
	sizes := []int{0, 1, 4096, raWhole - 1, raWhole, raWhole + 1, raArena - 1, raArena, 3 * raArena}
	var paths []string
	var want [][]byte
	for i := range 3 * raMaxFiles {
		b := bytes.Repeat([]byte{byte(i)}, sizes[i%len(sizes)])
		p := filepath.Join(dir, fmt.Sprintf("f%03d", i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths, want = append(paths, p), append(want, b)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	paths = append(paths[:7], append([]string{filepath.Join(dir, "nope"), filepath.Join(dir, "sub")}, paths[7:]...)...)
	want = append(want[:7], append([][]byte{nil, nil}, want[7:]...)...)

	for _, stop := range []int{len(paths), 40, 1} {
		t.Run(fmt.Sprint("take ", stop), func(t *testing.T) {
			var opened, closed atomic.Int32
			c := &copier{}
			r := c.startReadAhead(countSide{opened: &opened, closed: &closed, fail: "nope"}, paths)
			for i, p := range paths[:stop] {
				f := r.next()
				switch filepath.Base(p) {
				case "nope":
					if f.op != "open" || f.err != syscall.EACCES {
						t.Fatalf("%s: op %q err %v, want open: EACCES", p, f.op, f.err)
					}
					continue
				case "sub":
					if !f.notReg || f.err != nil {
						t.Fatalf("%s: notReg %v err %v, want a directory refused", p, f.notReg, f.err)
					}
					continue
				}
				if f.err != nil || f.st.Size != int64(len(want[i])) {
					t.Fatalf("%s: err %v size %d, want %d bytes", p, f.err, f.st.Size, len(want[i]))
				}
				got := f.data
				if f.f != nil {
					if len(want[i]) <= raWhole || f.data != nil {
						t.Fatalf("%s: %d bytes handed over open, with %d read", p, len(want[i]), len(f.data))
					}
					got = make([]byte, f.st.Size)
					if n, err := f.f.ReadAt(got, 0); n != len(got) {
						t.Fatalf("%s: read %d: %v", p, n, err)
					}
					f.f.Close()
				} else if len(want[i]) > raWhole {
					t.Fatalf("%s: %d bytes read whole", p, len(want[i]))
				}
				if !bytes.Equal(got, want[i]) {
					t.Fatalf("%s: contents differ", p)
				}
			}
			r.close()
			if o, c := opened.Load(), closed.Load(); o != c {
				t.Errorf("%d files opened, %d closed", o, c)
			}
		})
	}
}
