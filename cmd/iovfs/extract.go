package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/shell"
	"github.com/iovfs/iovfs/vfs"
)

// runBuiltinOn runs the shell builtin name on the image path, from the
// image's root, so that names print as paths inside the image. npath is
// the resolved namespace path under root, the image's mount; img is the
// image as the user named it. The builtin's messages get the command's
// prefix, name no path of the namespace, and any status but 0 is a
// failure.
func runBuiltinOn(p *vfs.Proc, root, name string, flags []string, npath, img string, stdout io.Writer, c *cli) int {
	rel := strings.TrimPrefix(strings.TrimPrefix(npath, root), "/")
	if rel == "" {
		rel = "."
	}
	args := append(append(append([]string{name}, flags...), "--"), rel)
	var errBuf bytes.Buffer
	status := shell.RunCommand(context.Background(), p, root, args, nil, stdout, &errBuf)
	for _, line := range strings.Split(strings.TrimRight(errBuf.String(), "\n"), "\n") {
		if line == "" {
			continue
		}
		line = strings.TrimPrefix(line, name+": ")
		line = strings.ReplaceAll(line, root, img+":")
		c.errorf("%s", loopDevName.ReplaceAllString(line, img))
	}
	if status != 0 {
		return 1
	}
	return 0
}

// printTree prints the tree under npath, which is path in the image img,
// as tree(1) does.
func printTree(p *vfs.Proc, root, npath, path, img string, stdout io.Writer, c *cli) int {
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	name := strings.TrimPrefix(path, "/")
	if name == "" {
		name = "."
	}
	fmt.Fprintln(w, name)
	var dirs, files int
	status := 0
	var walk func(dir, prefix string)
	walk = func(dir, prefix string) {
		ents, err := listDir(p, dir)
		if err != nil {
			w.Flush()
			c.errorf("%s:/%s: %s", img, strings.TrimPrefix(strings.TrimPrefix(dir, root), "/"), errText(err))
			status = 1
			return
		}
		for i, e := range ents {
			branch, next := "├── ", "│   "
			if i == len(ents)-1 {
				branch, next = "└── ", "    "
			}
			full := dir + "/" + e.Name
			line := prefix + branch + e.Name
			if e.Type == unix.DT_LNK {
				if t, err := p.Readlink(full); err == nil {
					line += " -> " + t
				}
			}
			fmt.Fprintln(w, line)
			if e.Type == unix.DT_DIR {
				dirs++
				walk(full, prefix+next)
			} else {
				files++
			}
		}
	}
	walk(npath, "")
	fmt.Fprintf(w, "\n%d %s, %d %s\n", dirs, plural(dirs, "directory", "directories"), files, plural(files, "file", "files"))
	return status
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// listDir lists a directory without "." and "..", sorted by name.
func listDir(p *vfs.Proc, dir string) ([]vfs.Dirent, error) {
	fd, err := p.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer p.Close(fd)
	var out []vfs.Dirent
	for {
		ds, err := p.Getdents(fd)
		if err != nil {
			return nil, err
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			if d.Name != "." && d.Name != ".." {
				out = append(out, d)
			}
		}
	}
	sortDirents(out)
	return out, nil
}

func sortDirents(ds []vfs.Dirent) {
	sort.Slice(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name })
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
