package main

// iovfs cp compared with GNU cp on the host: each case runs GNU cp
// between host directories, then iovfs cp with the destination inside an
// ext4 image (host to image) and with the source inside one (image to
// host), from the same starting trees; exit statuses and the resulting
// trees (types, contents, link targets, modes, and times with -p/-a)
// must agree, and e2fsck must find the written image clean.

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
)

func unixUmask(m int) int { return unix.Umask(m) }

type cpCase struct {
	name string
	args []string // "S:x" is x in the source tree, "D:x" x in the destination tree
	dest func(t *testing.T, dir string)
}

// cpSource is every case's source tree.
func cpSource(t *testing.T, dir string) {
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "dir/sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "file"), []byte("file data\n"), 0o640))
	must(os.WriteFile(filepath.Join(dir, "other"), []byte("other\n"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "dir/a"), []byte("a in dir\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "dir/sub/b"), bytes.Repeat([]byte("b"), 70000), 0o755))
	must(os.Symlink("file", filepath.Join(dir, "link")))
	must(os.Symlink("../file", filepath.Join(dir, "dir/up")))
	must(os.Chmod(filepath.Join(dir, "dir/sub"), 0o750))
	// Times in the past, so that kept ones are told from new ones.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d.Type()&fs.ModeSymlink == 0 {
			os.Chtimes(p, pastTime, pastTime)
		}
		return nil
	})
}

var (
	pastTime  = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	pastLimit = time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)
)

func withFile(name, data string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func withDir(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func both(a, b func(*testing.T, string)) func(*testing.T, string) {
	return func(t *testing.T, dir string) { a(t, dir); b(t, dir) }
}

var cpCases = []cpCase{
	{name: "file to new name", args: []string{"S:file", "D:copy"}},
	{name: "file into dir", args: []string{"S:file", "D:existing"}, dest: withDir("existing")},
	{name: "file over file", args: []string{"S:file", "D:old"}, dest: withFile("old", "old contents that are longer\n")},
	{name: "no clobber", args: []string{"-n", "S:file", "D:old"}, dest: withFile("old", "kept\n")},
	{name: "dir without -r", args: []string{"S:dir", "D:new"}},
	{name: "dir to new name", args: []string{"-r", "S:dir", "D:new"}},
	{name: "dir into existing dir", args: []string{"-r", "S:dir", "D:existing"}, dest: withDir("existing")},
	{name: "dir with slash into existing dir", args: []string{"-r", "S:dir/", "D:existing"}, dest: withDir("existing")},
	{name: "dir merges into existing copy", args: []string{"-r", "S:dir", "D:existing"}, dest: both(withFile("existing/dir/a", "old a\n"), withFile("existing/dir/keep", "keep\n"))},
	{name: "dir to new name with slash", args: []string{"-r", "S:dir", "D:new/"}},
	{name: "several into dir", args: []string{"S:file", "S:other", "D:existing"}, dest: withDir("existing")},
	{name: "several into non-dir", args: []string{"S:file", "S:other", "D:old"}, dest: withFile("old", "x")},
	{name: "several into missing", args: []string{"S:file", "S:other", "D:missing"}},
	{name: "file to missing dir slash", args: []string{"S:file", "D:missing/"}},
	{name: "file into missing parent", args: []string{"S:file", "D:nope/copy"}},
	{name: "dir over file", args: []string{"-r", "S:dir", "D:old"}, dest: withFile("old", "x")},
	{name: "file over dir", args: []string{"S:file", "D:existing/file"}, dest: withDir("existing/file")},
	{name: "missing source", args: []string{"S:nope", "D:x"}},
	{name: "symlink followed", args: []string{"S:link", "D:copy"}},
	{name: "symlink with -r", args: []string{"-r", "S:link", "D:copy"}},
	{name: "tree with -a", args: []string{"-a", "S:dir", "D:new"}},
	{name: "file with -p", args: []string{"-p", "S:file", "D:copy"}},
	{name: "tree with -a over existing", args: []string{"-a", "S:dir", "D:existing"}, dest: both(withDir("existing"), withFile("existing/dir/a", "stale\n"))},
	{name: "root of source", args: []string{"-r", "S:", "D:all"}},
}

// entry is one file of a result tree.
type entry struct {
	kind, mode, data, mtime string
}

func readTree(t *testing.T, root string, times bool) map[string]entry {
	out := map[string]entry{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.Name() == "lost+found" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		e := entry{kind: fi.Mode().Type().String(), mode: fmt.Sprintf("%o", fi.Mode().Perm())}
		switch {
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			e.data = fmt.Sprintf("%x", sha256.Sum256(b))
		case fi.Mode()&fs.ModeSymlink != 0:
			e.data, _ = os.Readlink(p)
			e.mode = ""
		}
		// Times kept from the source (set in the past by cpSource's
		// touch); those of "now" depend on when each cp ran.
		if times && fi.Mode()&fs.ModeSymlink == 0 && fi.ModTime().Before(pastLimit) {
			e.mtime = fmt.Sprint(fi.ModTime().Unix())
		}
		out[rel] = e
		return nil
	})
	return out
}

func treeDiffs(got, want map[string]entry) []string {
	var d []string
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			d = append(d, "missing "+k)
		} else if g != w {
			d = append(d, fmt.Sprintf("%s: got %+v, want %+v", k, g, w))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, "extra "+k)
		}
	}
	sort.Strings(d)
	return d
}

func subst(args []string, src, dst string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "S:"):
			out[i] = src + a[2:]
		case strings.HasPrefix(a, "D:"):
			out[i] = dst + a[2:]
		default:
			out[i] = a
		}
	}
	return out
}

// mkImage makes an ext4 image holding dir's tree.
func mkImage(t *testing.T, dir string) string {
	img := filepath.Join(t.TempDir(), "disk.img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", dir, img, "32M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	return img
}

func TestCpGNUTable(t *testing.T) {
	testenv.RequireRoot(t, "reads the written images through a kernel loop mount")
	testenv.RequireTool(t, "cp", "mke2fs", "e2fsck")
	old := unixUmask(0o022)
	defer unixUmask(old)
	cases := 0
	for _, c := range cpCases {
		t.Run(c.name, func(t *testing.T) {
			times := false
			for _, a := range c.args {
				times = times || a == "-a" || a == "-p"
			}
			src := t.TempDir()
			cpSource(t, src)
			// GNU cp, host to host.
			gnu := t.TempDir()
			if c.dest != nil {
				c.dest(t, gnu)
			}
			cmd := exec.Command("cp", subst(c.args, src+"/", gnu+"/")...)
			gout, gerr := cmd.CombinedOutput()
			gstatus := 0
			if gerr != nil {
				gstatus = 1
			}
			want := readTree(t, gnu, times)

			// Host to image.
			ddir := t.TempDir()
			if c.dest != nil {
				c.dest(t, ddir)
			}
			img := mkImage(t, ddir)
			var stdout, stderr bytes.Buffer
			st := run(append([]string{"cp"}, subst(c.args, src+"/", img+":/")...), &stdout, &stderr)
			if (st != 0) != (gstatus != 0) {
				t.Errorf("host to image: status %d, GNU cp %d\niovfs: %s\nGNU: %s", st, gstatus, stderr.String(), gout)
			}
			if out, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
				t.Errorf("e2fsck after host to image: %v\n%s", err, out)
			}
			kdir, err := kernelMount(t, img)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range treeDiffs(readTree(t, kdir, times), want) {
				t.Errorf("host to image: %s", d)
			}

			// Image to host.
			simg := mkImage(t, src)
			hdst := t.TempDir()
			if c.dest != nil {
				c.dest(t, hdst)
			}
			stdout.Reset()
			stderr.Reset()
			st = run(append([]string{"cp"}, subst(c.args, simg+":/", hdst+"/")...), &stdout, &stderr)
			if (st != 0) != (gstatus != 0) {
				t.Errorf("image to host: status %d, GNU cp %d\niovfs: %s\nGNU: %s", st, gstatus, stderr.String(), gout)
			}
			for _, d := range treeDiffs(readTree(t, hdst, times), want) {
				t.Errorf("image to host: %s", d)
			}
			cases++
		})
	}
	t.Logf("%d cp cases compared with GNU cp, host to image and image to host", cases)
}
