package vfs

// The path walk (Linux fs/namei.c). Each step asks the directory's own
// Lookup; the walk takes no global lock.

import (
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Linux limits on names and symlinks.
const (
	maxPath     = 4096 // PATH_MAX, counting the terminating NUL
	maxName     = 255  // NAME_MAX
	maxSymlinks = 40   // MAXSYMLINKS
)

// Lookuper is a directory: Lookup returns the child called name, or ENOENT.
// name is never "" or "."; ".." must return the parent directory (the
// directory itself at the root of the file system).
type Lookuper interface {
	Lookup(name string) (Node, error)
}

// Readlinker is a symbolic link.
type Readlinker interface {
	Readlink() (string, error)
}

// location is a node and the mount it was reached through.
type location struct {
	mnt  *mount
	node Node
}

// walk resolves path from start. follow says whether a symlink in the last
// component is followed.
func (ns *Namespace) walk(start location, path string, follow bool) (location, error) {
	links := 0
	return ns.walkLinks(start, path, follow, &links)
}

func (ns *Namespace) walkLinks(start location, path string, follow bool, links *int) (location, error) {
	if len(path) == 0 {
		return location{}, errENOENT
	}
	if len(path) >= maxPath {
		return location{}, syscall.ENAMETOOLONG
	}
	cur := start
	if path[0] == '/' {
		cur = location{ns.root, ns.root.root}
	}
	rest := path
	for {
		for len(rest) > 0 && rest[0] == '/' {
			rest = rest[1:]
		}
		if rest == "" {
			return cur, nil
		}
		name := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			name, rest = rest[:i], rest[i:]
		} else {
			rest = ""
		}
		last := strings.TrimLeft(rest, "/") == ""
		if len(name) > maxName {
			return location{}, syscall.ENAMETOOLONG
		}
		if name == "." {
			if err := mustDir(cur.node); err != nil {
				return location{}, err
			}
			continue
		}
		if name == ".." {
			if err := mustDir(cur.node); err != nil {
				return location{}, err
			}
			cur = ns.parentOf(cur)
			continue
		}
		dir, ok := cur.node.(Lookuper)
		if !ok {
			return location{}, errENOTDIR
		}
		child, err := dir.Lookup(name)
		if err != nil {
			return location{}, err
		}
		next := ns.crossMounts(location{cur.mnt, child})
		if rl, ok := next.node.(Readlinker); ok && (!last || follow || rest != "") {
			*links++
			if *links > maxSymlinks {
				return location{}, syscall.ELOOP
			}
			target, err := rl.Readlink()
			if err != nil {
				return location{}, err
			}
			next, err = ns.walkLinks(cur, target, true, links)
			if err != nil {
				return location{}, err
			}
		}
		cur = next
	}
}

// crossMounts follows mounts stacked on loc.
func (ns *Namespace) crossMounts(loc location) location {
	for {
		m := ns.mountedOn(loc.mnt, loc.node)
		if m == nil {
			return loc
		}
		loc = location{m, m.root}
	}
}

// parentOf returns the parent directory of loc, going up through mount
// roots (Linux follow_dotdot). The namespace root is its own parent.
func (ns *Namespace) parentOf(loc location) location {
	for loc.node == loc.mnt.root {
		if loc.mnt.parent == nil {
			return loc
		}
		loc = location{loc.mnt.parent, loc.mnt.point}
	}
	dir, ok := loc.node.(Lookuper)
	if !ok {
		return loc
	}
	up, err := dir.Lookup("..")
	if err != nil {
		return loc
	}
	return ns.crossMounts(location{loc.mnt, up})
}

// mustDir returns ENOTDIR unless n is a directory.
func mustDir(n Node) error {
	if _, ok := n.(Lookuper); ok {
		return nil
	}
	st, err := n.Stat()
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return errENOTDIR
	}
	return nil
}
