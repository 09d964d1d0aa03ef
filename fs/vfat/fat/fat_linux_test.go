package fat_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/fs/vfat/fat"
	"github.com/iovfs/iovfs/internal/testenv"
)

// fileDev is a Device over a host file.
type fileDev struct{ f *os.File }

func (d fileDev) ReadAt(p []byte, off int64) (int, error)  { return d.f.ReadAt(p, off) }
func (d fileDev) WriteAt(p []byte, off int64) (int, error) { return d.f.WriteAt(p, off) }
func (d fileDev) Size() int64                              { st, _ := d.f.Stat(); return st.Size() }
func (d fileDev) Flush() error                             { return d.f.Sync() }

// mkfs makes an image of size bytes with mkfs.fat and args.
func mkfs(t *testing.T, size int64, args ...string) string {
	t.Helper()
	testenv.RequireTool(t, "mkfs.fat", "fsck.fat", "mdir", "mtype")
	img := filepath.Join(t.TempDir(), "fat.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mkfs.fat", append(args, img)...).CombinedOutput()
	if err != nil {
		t.Fatalf("mkfs.fat: %v\n%s", err, out)
	}
	return img
}

func openVol(t *testing.T, img string, ro bool) (*fat.Volume, func()) {
	t.Helper()
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := fat.Open(fileDev{f}, fat.Options{ReadOnly: ro})
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	return v, func() {
		if err := v.Close(); err != nil {
			t.Error(err)
		}
		f.Close()
	}
}

// fsck runs fsck.fat -n and fails on any complaint.
func fsck(t *testing.T, img string) {
	t.Helper()
	out, err := exec.Command("fsck.fat", "-n", "-V", img).CombinedOutput()
	s := string(out)
	if err != nil || strings.Contains(s, "\n  ") || strings.Contains(strings.ToLower(s), "dirty") {
		t.Fatalf("fsck.fat -n: %v\n%s", err, s)
	}
}

var fatTypes = []struct {
	name string
	size int64
	args []string
}{
	{"fat12", 4 << 20, []string{"-F", "12"}},
	{"fat16", 32 << 20, []string{"-F", "16"}},
	{"fat32", 64 << 20, []string{"-F", "32", "-s", "1"}},
}

func mtype(t *testing.T, img, path string) []byte {
	t.Helper()
	out, err := exec.Command("mtype", "-i", img, "::"+path).Output()
	if err != nil {
		t.Fatalf("mtype %s: %v", path, err)
	}
	return out
}

// mdirNames lists a directory with mtools: long names, else 8.3 names.
func mdirNames(t *testing.T, img, path string) []string {
	t.Helper()
	out, err := exec.Command("mdir", "-i", img, "-b", "::"+path).Output()
	if err != nil {
		t.Fatalf("mdir %s: %v", path, err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l == "" {
			continue
		}
		n := strings.TrimPrefix(l, "::"+strings.TrimSuffix(path, "/")+"/")
		n = strings.TrimSuffix(n, "/")
		if n == "." || n == ".." {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func TestWriteReadBack(t *testing.T) {
	for _, ft := range fatTypes {
		t.Run(ft.name, func(t *testing.T) {
			img := mkfs(t, ft.size, ft.args...)
			v, done := openVol(t, img, false)
			now := time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)
			root := v.Root()
			names := []string{"README.TXT", "readme2.txt", "Mixed.Txt", "a very long file name with spaces.jpeg", "x.tar.gz", "résumé.doc", ".hidden", "UPPER", "lower", "a+b=c;d"}
			data := map[string][]byte{}
			r := rand.New(rand.NewPCG(1, 2))
			for i, nm := range names {
				n, err := v.Create(root, nm, false, now)
				if err != nil {
					t.Fatalf("create %q: %v", nm, err)
				}
				b := make([]byte, r.IntN(3*4096)+i)
				for j := range b {
					b[j] = byte(r.Uint32())
				}
				if w, err := v.WriteAt(n, b, 0, now); err != nil || w != len(b) {
					t.Fatalf("write %q: %d %v", nm, w, err)
				}
				data[nm] = b
			}
			if _, err := v.Create(root, "readme.txt", false, now); !errors.Is(err, syscall.EEXIST) {
				t.Errorf("create readme.txt beside README.TXT: %v, want EEXIST", err)
			}
			if _, err := v.Create(root, "bad:name", false, now); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("create bad:name: %v, want EINVAL", err)
			}
			d, err := v.Create(root, "Sub Dir", true, now)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 40 { // more than a cluster of entries
				nm := fmt.Sprintf("file number %03d.data", i)
				n, err := v.Create(d, nm, false, now)
				if err != nil {
					t.Fatalf("create %s: %v", nm, err)
				}
				v.WriteAt(n, []byte(nm), 0, now)
			}
			if err := v.Rename(root, "x.tar.gz", d, "moved.tar.gz", false, now); err != nil {
				t.Fatal(err)
			}
			data["Sub Dir/moved.tar.gz"] = data["x.tar.gz"]
			delete(data, "x.tar.gz")
			if err := v.Remove(root, "lower", false, now); err != nil {
				t.Fatal(err)
			}
			delete(data, "lower")
			if err := v.Remove(root, "Sub Dir", true, now); !errors.Is(err, syscall.ENOTEMPTY) {
				t.Errorf("rmdir non-empty: %v", err)
			}
			n, _ := v.Lookup(root, "UPPER")
			if err := v.Truncate(n, 10000, now); err != nil {
				t.Fatal(err)
			}
			data["UPPER"] = append(data["UPPER"], make([]byte, 10000-len(data["UPPER"]))...)
			n, _ = v.Lookup(root, "readme2.txt")
			if err := v.Truncate(n, 3, now); err != nil {
				t.Fatal(err)
			}
			data["readme2.txt"] = data["readme2.txt"][:3]
			// Lookups by alias and case.
			if _, err := v.Lookup(root, "A VERY LONG FILE NAME WITH SPACES.JPEG"); err != nil {
				t.Errorf("case-insensitive lookup: %v", err)
			}
			if _, err := v.Lookup(root, "AVERYL~1.JPE"); err != nil {
				t.Errorf("alias lookup: %v", err)
			}
			done()
			fsck(t, img)
			for nm, b := range data {
				if got := mtype(t, img, "/"+nm); !bytes.Equal(got, b) {
					t.Errorf("mtype %s: %d bytes differ from the %d written", nm, len(got), len(b))
				}
			}
			got := mdirNames(t, img, "/")
			want := []string{".hidden", "Mixed.Txt", "README.TXT", "Sub Dir", "UPPER", "a very long file name with spaces.jpeg", "a+b=c;d", "readme2.txt", "résumé.doc"}
			sort.Strings(want)
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("mdir /: %q\nwant %q", got, want)
			}
			if sub := mdirNames(t, img, "/Sub Dir"); len(sub) != 41 {
				t.Errorf("mdir /Sub Dir: %d names", len(sub))
			}
		})
	}
}
