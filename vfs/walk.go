package vfs

// The path walk (Linux fs/namei.c). Each step asks the directory's own
// Lookup; the walk takes no global lock: the mount table is one atomic
// load, and the process's cwd is read once at the start.

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

// walker is one path resolution; links counts the symlinks followed, for
// ELOOP.
type walker struct {
	ns    *Namespace
	links int
	// cred is whose permissions the walk checks (search permission on
	// every directory a name is looked up in); nil checks none, for the
	// namespace's own set-up walks.
	cred *creds
	// root is where an absolute path or symlink leads, and where ".."
	// stops: the namespace root, or the starting directory for
	// RESOLVE_IN_ROOT and RESOLVE_BENEATH.
	root location
	// rflags holds openat2's RESOLVE_* flags.
	rflags uint64
	// seq is the namespace's rename and mount sequence when a scoped
	// walk began: a ".." after it moved gives EAGAIN, as Linux's
	// handle_dots does, since the walk may have been moved outside root.
	seq uint64
}

// scoped reports whether the walk is confined to root.
func (w *walker) scoped() bool {
	return w.rflags&(unix.RESOLVE_BENEATH|unix.RESOLVE_IN_ROOT) != 0
}

// jumpRoot is Linux's nd_jump_root, for an absolute path or symlink met
// at cur: EXDEV under RESOLVE_BENEATH, and under RESOLVE_NO_XDEV when cur
// is on another mount than root (an absolute path argument, met with a
// zero cur, is allowed).
func (w *walker) jumpRoot(cur location) (location, error) {
	if w.rflags&unix.RESOLVE_BENEATH != 0 {
		return location{}, unix.EXDEV
	}
	if w.rflags&unix.RESOLVE_NO_XDEV != 0 && cur.mnt != nil && cur.mnt != w.root.mnt {
		return location{}, unix.EXDEV
	}
	return w.root, nil
}

// start returns where a walk of path begins: the root for an absolute path,
// cwd otherwise.
func (ns *Namespace) start(cwd location, path string) location {
	if strings.HasPrefix(path, "/") || cwd.mnt == nil {
		return ns.rootLoc()
	}
	return cwd
}

// rootLoc is the root of the namespace.
func (ns *Namespace) rootLoc() location { return location{ns.root, ns.root.root} }

// walk resolves path from cwd. follow says whether a symlink in the last
// component is followed.
func (ns *Namespace) walk(cwd location, path string, follow bool) (location, error) {
	w := walker{ns: ns, root: ns.rootLoc()}
	return w.resolve(ns.start(cwd, path), path, follow)
}

// checkPath applies the length limits of getname and the empty-path rule.
func checkPath(path string) error {
	if path == "" {
		return errENOENT
	}
	if len(path) >= maxPath {
		return syscall.ENAMETOOLONG
	}
	return nil
}

// resolve walks path from cur.
func (w *walker) resolve(cur location, path string, follow bool) (location, error) {
	if err := checkPath(path); err != nil {
		return location{}, err
	}
	last := uint8(lastTake)
	if follow {
		last |= lastFollow
	}
	dir, name, trailing, err := w.walkParent(cur, path, last)
	if err != nil || name == cachedAll {
		return dir, err
	}
	loc, _, err := w.stepKind(dir, name, follow || trailing, true)
	if err != nil {
		return location{}, err
	}
	if trailing {
		if err := mustDir(loc.node); err != nil {
			return location{}, err
		}
	}
	return loc, nil
}

// parent walks every component of path but the last and returns the
// directory reached, the last component ("" when path is all slashes, "."
// or ".." as written), and whether path ended in a slash.
func (w *walker) parent(cur location, path string) (location, string, bool, error) {
	return w.walkParent(cur, path, 0)
}

// cachedAll is walkParent's name when the cached prefix walked the last
// component too: its location is then the result. No component can be
// it (it holds a slash).
const cachedAll = "/"

// walkParent is parent; with lastTake in last (cachedPrefix's flags),
// when the path has no trailing slash and its last component is cached,
// it walks that too and returns the result with the name cachedAll.
func (w *walker) walkParent(cur location, path string, last uint8) (location, string, bool, error) {
	if path[0] == '/' {
		root, err := w.jumpRoot(cur)
		if err != nil {
			return location{}, "", false, err
		}
		cur = root
	}
	trimmed := path
	if path[len(path)-1] == '/' {
		trimmed = strings.TrimRight(path, "/")
		last = 0 // resolve checks the result is a directory
	}
	trailing := len(trimmed) < len(path)
	rest := trimmed
	// cur's mode, owner and group, once the Stat that checks it is a
	// directory has shown them: the search check then costs a compare.
	var dmode, duid, dgid uint32
	known := false
	stepped := false                              // cur is the result of a step, tested to be a directory
	check := w.cred != nil && !w.cred.fsCapable() // CAP_DAC_OVERRIDE searches anything
	if !w.ns.dcache.off {                         // walkcached.go
		var a dirAttrs
		ap := &a
		if !check {
			ap = nil
		}
		var done bool
		if stepped, done = w.cachedPrefix(&cur, &rest, ap, last); done {
			return cur, cachedAll, false, nil
		}
		dmode, duid, dgid, known = a.mode, a.uid, a.gid, a.known
	}
	for {
		for len(rest) > 0 && rest[0] == '/' {
			rest = rest[1:]
		}
		if rest != "" && check {
			// may_lookup: search permission on every directory a name
			// is looked up in, the last one included.
			if !known {
				var err error
				if dmode, duid, dgid, err = nodeAttrs(cur.node); err != nil {
					return location{}, "", false, err
				}
			}
			// With every x bit set and no ACL, whichever class
			// generic_permission picks grants the search: skip the call
			// (most directories).
			if dmode&(0o111|PermACL) != 0o111 {
				if err := w.cred.generic(cur.node, dmode, duid, dgid, MayExec); err != nil {
					return location{}, "", false, err
				}
			}
		}
		i := indexSlash(rest)
		if i < 0 {
			if len(rest) > maxName {
				return location{}, "", false, syscall.ENAMETOOLONG
			}
			if !stepped { // a step's result was tested below
				if err := mustDir(cur.node); err != nil {
					return location{}, "", false, err
				}
			}
			return cur, rest, trailing, nil
		}
		next, e, err := w.stepKind(cur, rest[:i], true, false)
		if err != nil {
			return location{}, "", false, err
		}
		// The directory test, and the attributes the next search check
		// needs, without a full Stat: a PermAttrer or FileTyper answers
		// from atomics, where Stat may take the inode's lock and convert
		// three times.
		if check {
			var mode, uid, gid uint32
			if e != nil && e.perm != nil {
				mode, uid, gid = e.perm.PermAttrs()
			} else if mode, uid, gid, err = nodeAttrs(next.node); err != nil {
				return location{}, "", false, w.notDir()
			}
			if mode&unix.S_IFMT != unix.S_IFDIR {
				return location{}, "", false, w.notDir()
			}
			dmode, duid, dgid, known = mode, uid, gid, true
		} else if e != nil && e.kind&kindDir == 0 || e == nil && !isDir(next.node) {
			return location{}, "", false, w.notDir()
		}
		cur, rest, stepped = next, rest[i:], true
	}
}

// notDir is the error for a path component that is not a directory:
// ENOTDIR, or EAGAIN under RESOLVE_CACHED (Linux leaves RCU-walk to report
// ENOTDIR, which LOOKUP_CACHED forbids).
func (w *walker) notDir() error {
	if w.rflags&resolveCached != 0 {
		return unix.EAGAIN
	}
	return errENOTDIR
}

// indexSlash is strings.IndexByte(s, '/'), with a plain loop over the
// first bytes: path components are short, and the assembly routine's
// set-up cost more than the scan (12% of a cached Lstat in pprof).
func indexSlash(s string) int {
	n := min(len(s), 32)
	for i := 0; i < n; i++ {
		if s[i] == '/' {
			return i
		}
	}
	if len(s) > n {
		if i := strings.IndexByte(s[n:], '/'); i >= 0 {
			return n + i
		}
	}
	return -1
}

// step resolves the last component name of a path in directory cur,
// following a symlink there if follow is set.
func (w *walker) step(cur location, name string, follow bool) (location, error) {
	loc, _, err := w.stepKind(cur, name, follow, true)
	return loc, err
}

// stepKind is step for any component (last says it is a path's last),
// and also returns the dentry that describes the result (its kind and
// perm), or nil.
func (w *walker) stepKind(cur location, name string, follow, last bool) (location, *dentry, error) {
	if c := w.ns.dcache; !c.off {
		if e := c.hit(cur.node, name); e != nil {
			// The cached step, RCU-walk's: no name checks (no dentry
			// holds a name they would refuse), no type assertion.
			if e.child == nil {
				return location{}, nil, errENOENT
			}
			if w.ns.mountBits[e.cfw%filterWords].Load()&e.cfb == 0 && (!follow || e.kind&kindLink == 0) {
				return location{cur.mnt, e.child}, e, nil // no mount on it, no link to follow
			}
			return w.mounted(cur, e.child, e, follow, last)
		}
	}
	switch name {
	case "", ".":
		return cur, nil, mustDir(cur.node)
	case "..":
		if err := mustDir(cur.node); err != nil {
			return location{}, nil, err
		}
		loc, err := w.dotdot(cur)
		return loc, nil, err
	}
	if len(name) > maxName {
		return location{}, nil, syscall.ENAMETOOLONG
	}
	dir, ok := cur.node.(Lookuper)
	if !ok {
		return location{}, nil, errENOTDIR
	}
	var child Node
	var e *dentry
	var err error
	if w.rflags&resolveCached == 0 {
		child, e, err = w.ns.dcache.lookup(cur.node, dir, name, cur.mnt.fs) // dcache.go
	} else {
		child, err = w.ns.dcache.lookupCached(cur.node, name) // dcache_cached.go
	}
	if err != nil {
		return location{}, nil, err
	}
	return w.mounted(cur, child, e, follow, last)
}

// mounted finishes a step from cur to child, which e describes (or nil):
// it crosses the mounts on child and follows it if it is a symlink and
// follow is set (a trailing symlink if last is). The dentry returned
// describes the result, or is nil.
func (w *walker) mounted(cur location, child Node, e *dentry, follow, last bool) (location, *dentry, error) {
	next := location{cur.mnt, child}
	if w.ns.mountBits.mayCover(child) {
		next = w.ns.crossMounts(next)
		if next.mnt != cur.mnt {
			if w.rflags&unix.RESOLVE_NO_XDEV != 0 {
				return location{}, nil, unix.EXDEV
			}
			e = nil // it described the covered node, not the mount's root
		}
	}
	if !follow || e != nil && e.kind&kindLink == 0 {
		return next, e, nil
	}
	loc, err := w.follow(cur, next, last)
	return loc, nil, err // a symlink's target, or a node not described
}

// follow resolves next if it is a symlink, relative to dir, the directory
// that holds it. A trailing symlink (the last component of a path, or of
// a trailing symlink's target) is subject to the Symlinks protection.
func (w *walker) follow(dir, next location, trailing bool) (location, error) {
	rl, ok := next.node.(Readlinker)
	if !ok {
		return next, nil
	}
	if w.rflags&unix.RESOLVE_NO_SYMLINKS != 0 {
		return location{}, syscall.ELOOP
	}
	w.links++
	if w.links > maxSymlinks {
		return location{}, syscall.ELOOP
	}
	if trailing && w.cred != nil {
		if err := w.cred.mayFollowLink(w.ns, dir, next); err != nil {
			return location{}, err
		}
	}
	target, err := readlinkAccess(rl, next)
	if err != nil {
		return location{}, err
	}
	if target == "" {
		return location{}, errENOENT
	}
	return w.resolve(dir, target, true)
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

// dotdot is ".." from cur, Linux's follow_dotdot and handle_dots: at the
// walk's root it stays there (EXDEV under RESOLVE_BENEATH); it goes up
// through mount roots (EXDEV under RESOLVE_NO_XDEV); a scoped walk gives
// EAGAIN if a rename or mount change ran since it began, since cur may
// then have been moved outside root.
func (w *walker) dotdot(cur location) (location, error) {
	inRoot := func() (location, error) {
		if w.rflags&unix.RESOLVE_BENEATH != 0 {
			return location{}, unix.EXDEV
		}
		return cur, nil
	}
	if cur == w.root {
		return inRoot()
	}
	loc := cur
	for loc.node == loc.mnt.root {
		if loc.mnt.parent == nil {
			return inRoot()
		}
		loc = location{loc.mnt.parent, loc.mnt.point}
		if loc == w.root {
			return inRoot()
		}
		if w.rflags&unix.RESOLVE_NO_XDEV != 0 {
			return location{}, unix.EXDEV
		}
	}
	next := loc
	if dir, ok := loc.node.(Lookuper); ok {
		if up, err := dir.Lookup(".."); err == nil {
			next = w.ns.crossMounts(location{loc.mnt, up})
			if next.mnt != loc.mnt && w.rflags&unix.RESOLVE_NO_XDEV != 0 {
				return location{}, unix.EXDEV
			}
		}
	}
	if w.scoped() && w.ns.rename.retry(w.seq) {
		return location{}, unix.EAGAIN
	}
	return next, nil
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

// isDir reports whether n is a directory.
func isDir(n Node) bool {
	if ft, ok := n.(FileTyper); ok {
		return ft.FileType() == unix.S_IFDIR
	}
	st, err := n.Stat()
	return err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// mustDir returns ENOTDIR unless n is a directory.
func mustDir(n Node) error {
	if !isDir(n) {
		return errENOTDIR
	}
	return nil
}
