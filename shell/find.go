package shell

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func init() {
	// find's words are an expression, not options.
	register(&builtin{name: "find", summary: "search for files (-name -type -maxdepth)",
		synopsis: "[PATH]... [EXPRESSION]", style: raw, run: runFind})
}

func runFind(c *cmd, _ flags, args []string) int {
	var roots []string
	i := 0
	for ; i < len(args) && !strings.HasPrefix(args[i], "-"); i++ {
		roots = append(roots, args[i])
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	maxDepth := -1
	var names []string
	var types string
	for ; i < len(args); i++ {
		a := args[i]
		if i+1 >= len(args) && (a == "-name" || a == "-type" || a == "-maxdepth") {
			c.errorf("missing argument to `%s'", a)
			return 1
		}
		switch a {
		case "-name":
			i++
			names = append(names, args[i])
		case "-type":
			i++
			types += args[i]
		case "-maxdepth":
			i++
			n, err := strconv.Atoi(args[i])
			if err != nil || n < 0 {
				c.errorf("Expected a positive decimal integer argument to -maxdepth, but got %s", quote(args[i]))
				return 1
			}
			maxDepth = n
		case "-print":
		default:
			c.errorf("unknown predicate `%s'", a)
			return 1
		}
	}
	match := func(name string, st vfs.Stat) bool {
		for _, pat := range names {
			if ok, _ := path.Match(pat, name); !ok {
				return false
			}
		}
		if types != "" {
			t := map[uint32]byte{unix.S_IFREG: 'f', unix.S_IFDIR: 'd', unix.S_IFLNK: 'l', unix.S_IFCHR: 'c',
				unix.S_IFBLK: 'b', unix.S_IFIFO: 'p', unix.S_IFSOCK: 's'}[st.Mode&unix.S_IFMT]
			if !strings.ContainsRune(types, rune(t)) {
				return false
			}
		}
		return true
	}
	status := 0
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		if c.stopped() {
			return
		}
		st, err := c.p.Lstat(p)
		if err != nil {
			c.errorf("%s: %s", quote(p), errText(err))
			status = 1
			return
		}
		if match(baseName(p), st) {
			fmt.Fprintln(c.out, p)
		}
		if !st.IsDir() || maxDepth >= 0 && depth >= maxDepth {
			return
		}
		ents, err := readDirents(c.p, p)
		if err != nil {
			c.errorf("%s: %s", quote(p), errText(err))
			status = 1
			return
		}
		for _, d := range ents {
			child := p + "/" + d.Name
			if strings.HasSuffix(p, "/") {
				child = p + d.Name
			}
			walk(child, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return status
}
