package overlay

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"weak"

	"github.com/iovfs/iovfs/notice"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Type is the file system type name Proc.Mount knows an overlay by.
const Type = "overlay"

// superMagic is OVERLAYFS_SUPER_MAGIC, statfs's f_type.
const superMagic = 0x794c7630

// Options are an overlay's mount options.
type Options struct {
	// Lower are the lower directories, uppermost first (lowerdir=A:B).
	Lower []string
	// Upper and Work are the upper directory and its work directory, on
	// the same mount; both empty for a read-only overlay of two or more
	// lower directories.
	Upper, Work string
	// UserXattr keeps the overlay's attributes in the user.overlay.
	// namespace instead of trusted.overlay. (the userxattr option).
	UserXattr bool
}

// ParseOptions parses mount data in overlayfs's syntax:
// "lowerdir=A:B,upperdir=U,workdir=W" with "\," and "\:" escaping a comma
// or colon in a path, and the options userxattr, default_permissions,
// redirect_dir=off|nofollow, index=off, metacopy=off, nfs_export=off,
// xino=off and uuid=. The features that the other values would turn on
// (redirect_dir, index, metacopy, nfs_export, xino, volatile) are not
// implemented: asking for one gives an error that wraps EINVAL, as does
// an unknown option.
func ParseOptions(data string) (Options, error) {
	return parseOptions(data, nil)
}

// parseOptions is ParseOptions calling resolve, unless nil, with each
// directory as its option is parsed: the kernel's ovl_parse_param looks
// each one up then, so that a missing directory is reported before an
// option after it is parsed and before the options are checked together.
func parseOptions(data string, resolve func(opt, path string) error) (Options, error) {
	var o Options
	for _, opt := range splitEscaped(data, ',') {
		k, v, hasV := strings.Cut(opt, "=")
		bad := func(what string) (Options, error) {
			return Options{}, fmt.Errorf("overlay: %s %q: %w", what, opt, unix.EINVAL)
		}
		switch k {
		case "":
			continue
		case "lowerdir":
			o.Lower = nil
			for _, l := range splitEscaped(v, ':') {
				if l == "" {
					// "::" starts Linux 6.5's data-only layers, which only
					// metacopy's redirects reach.
					return bad("data-only lower layers (::) are not implemented:")
				}
				o.Lower = append(o.Lower, unescape(l))
				if resolve != nil {
					if err := resolve(k, o.Lower[len(o.Lower)-1]); err != nil {
						return Options{}, err
					}
				}
			}
		case "upperdir", "workdir":
			path := unescape(v)
			if k == "upperdir" {
				o.Upper = path
			} else {
				o.Work = path
			}
			if resolve != nil && path != "" {
				if err := resolve(k, path); err != nil {
					return Options{}, err
				}
			}
		case "userxattr", "default_permissions":
			if hasV {
				return bad("unexpected value in")
			}
			o.UserXattr = o.UserXattr || k == "userxattr"
		case "redirect_dir":
			if v != "off" && v != "nofollow" {
				return Options{}, fmt.Errorf("overlay: %q is not implemented (only redirect_dir=off and nofollow are): %w", opt, unix.EINVAL)
			}
		case "index", "metacopy", "nfs_export", "xino":
			if v != "off" {
				return Options{}, fmt.Errorf("overlay: %q is not implemented (only %s=off is): %w", opt, k, unix.EINVAL)
			}
		case "uuid":
			switch v {
			case "null", "off", "on", "auto":
			default:
				return bad("invalid")
			}
		case "volatile", "verity", "lowerdir+", "datadir+":
			return Options{}, fmt.Errorf("overlay: %q is not implemented: %w", opt, unix.EINVAL)
		default:
			return bad("unknown option")
		}
	}
	return o, nil
}

// splitEscaped splits s at each sep not escaped by a backslash.
func splitEscaped(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unescape drops the backslashes that escape the next byte.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// FS is a mounted overlay.
type FS struct {
	upper  *layer // nil for a read-only overlay
	work   int    // workdir/work, open in upper.p
	lowers []*layer
	// samefs: every layer is on one file system (ovl_same_fs).
	samefs bool
	// prefix is where the overlay's own attributes live:
	// "trusted.overlay." or "user.overlay." (userxattr).
	prefix string
	root   *node

	// rootRefs are the layers' roots.
	rootRefs []real

	// pins hold the layers' original mounts, as Linux's layers hold
	// their superblocks; released by Shutdown.
	pins []*vfs.Backing

	tempID  atomic.Uint32 // names of temporary files in the work directory
	nextIno atomic.Uint64 // inode numbers of directories on layers of several file systems

	// whiteout is the mount's shared whiteout in the work directory, which
	// each new whiteout is a hard link to (ovl_whiteout); -1 until made,
	// and for good once a link to it fails.
	whMu     sync.Mutex
	whiteout int
	whLinks  bool

	// byUpper maps an upper non-directory's inode number to its node, so
	// that its hard links share one node.
	byUpperMu sync.Mutex
	byUpper   map[uint64]weak.Pointer[node]

	// origins keeps the nodes copied up in this mount that report their
	// lower object's inode number, so that it stays theirs while the
	// mount lasts (the kernel reads it from the origin file handle).
	originsMu sync.Mutex
	origins   map[*node]struct{}

	// tr has the layer descriptors the nodes hold, closed by Shutdown.
	tr *tracker

	// traps are the layers' roots and the work directories, which a
	// lookup in a layer never enters (ovl_setup_trap): it gives ELOOP
	// where layers overlap. Set by Open, read-only after.
	traps map[trapKey]struct{}

	// locked are the directories this overlay marked in use (its upper
	// directory and workdir), unmarked by Shutdown.
	locked []trapKey

	shutdown sync.Once
}

// trapKey identifies a directory by its st_dev and st_ino.
type trapKey struct{ dev, ino uint64 }

// isTrap reports whether the layer directory st is a trap.
func (fs *FS) isTrap(st vfs.Stat) bool {
	_, ok := fs.traps[trapKey{st.Dev, st.Ino}]
	return ok
}

// setTrap makes the directory open as fd in p a trap, and returns its
// key; one that already is one gives ELOOP (ovl_setup_trap: "conflicting
// path").
func (fs *FS) setTrap(p *vfs.Proc, fd int, what string) (trapKey, error) {
	st, err := p.Fstat(fd)
	if err != nil {
		return trapKey{}, errno(err)
	}
	k := trapKey{st.Dev, st.Ino}
	if _, ok := fs.traps[k]; ok {
		return k, fmt.Errorf("overlay: conflicting %s path: %w", what, unix.ELOOP)
	}
	fs.traps[k] = struct{}{}
	return k, nil
}

// inUse are the upper directories and workdirs of the overlays of this
// process, as Linux marks their inodes I_OVL_INUSE.
var inUse = struct {
	sync.Mutex
	dirs map[trapKey]struct{}
}{dirs: map[trapKey]struct{}{}}

// lockInUse marks k in use for fs and reports whether it was free
// (ovl_inuse_trylock).
func (fs *FS) lockInUse(k trapKey) bool {
	inUse.Lock()
	defer inUse.Unlock()
	if _, ok := inUse.dirs[k]; ok {
		return false
	}
	inUse.dirs[k] = struct{}{}
	fs.locked = append(fs.locked, k)
	return true
}

// isInUse reports whether k is an overlay's upper directory or workdir.
func isInUse(k trapKey) bool {
	inUse.Lock()
	defer inUse.Unlock()
	_, ok := inUse.dirs[k]
	return ok
}

// anyInUse reports whether one of the directories of l whose inode
// numbers are inos is in use.
func (l *layer) anyInUse(inos []uint64) bool {
	for _, ino := range inos {
		if isInUse(trapKey{l.dev, ino}) {
			return true
		}
	}
	return false
}

// reportInUse warns that a layer is another overlay's upper directory or
// workdir, or inside one. Without the index feature Linux mounts anyway
// and warns so (ovl_report_in_use).
func reportInUse(what string) {
	notice.Post(notice.Notice{Driver: Type, Msg: what + " is in-use as upperdir/workdir of another mount, accessing files from both mounts will result in undefined behavior"})
}

// A layer is one directory of the overlay, reached through a process in
// a private mount of it.
type layer struct {
	p   *vfs.Proc
	dev uint64 // st_dev of the layer's root
}

// errno returns the syscall.Errno that err carries, EIO for anything
// else: a layer's path errors name its own paths, which the overlay's
// caller never gave.
func errno(err error) error {
	if err == nil {
		return nil
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	return unix.EIO
}

// Mount is the vfs.MountFunc of the overlay type: Data holds the options
// (ParseOptions), whose directories are looked up by the mounting process
// as the kernel looks them up, relative to its current directory.
// Source is ignored, as the kernel ignores it.
func Mount(req vfs.MountRequest) (vfs.FileSystem, error) {
	p := req.Proc
	o, err := parseOptions(req.Data, func(opt, path string) error {
		fd, err := openDir(p, opt, path)
		if err == nil {
			p.Close(fd)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return New(p, o)
}

// openDir opens the directory path for the option opt, with the error
// the kernel's ovl_mount_dir gives.
func openDir(p *vfs.Proc, opt, path string) (int, error) {
	fd, err := p.Open(path, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		err = errno(err)
		if err == unix.ENOTDIR {
			err = unix.EINVAL // ovl_mount_dir: "is not a directory"
		}
		return -1, fmt.Errorf("overlay: %s %q: %w", opt, path, err)
	}
	return fd, nil
}

// New makes an overlay of the directories o names, looked up by p (as
// the kernel looks them up, relative to its current directory), which
// must be privileged (EPERM). The errors are Linux's: EINVAL for a missing
// lowerdir, an upperdir without workdir (or the reverse), a single lower
// directory without an upper one, directories that are not directories,
// a workdir on another mount than the upperdir or inside it; ENOENT for a
// directory that does not exist, which is looked for first (lowerdir,
// upperdir, workdir), as the kernel looks each up while it parses the
// options. They wrap a syscall.Errno and say which option is wrong.
func New(p *vfs.Proc, o Options) (*FS, error) {
	d := Dirs{Upper: -1, Work: -1, UserXattr: o.UserXattr}
	defer func() {
		for _, fd := range append(d.Lower, d.Upper, d.Work) {
			if fd >= 0 {
				p.Close(fd)
			}
		}
	}()
	for _, l := range o.Lower {
		fd, err := openDir(p, "lowerdir", l)
		if err != nil {
			return nil, err
		}
		d.Lower = append(d.Lower, fd)
	}
	var err error
	if o.Upper != "" {
		if d.Upper, err = openDir(p, "upperdir", o.Upper); err != nil {
			return nil, err
		}
	}
	if o.Work != "" {
		if d.Work, err = openDir(p, "workdir", o.Work); err != nil {
			return nil, err
		}
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	return Open(p, d)
}

// check is the kernel's check of the directories given.
func (o Options) check() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("overlay: "+format, args...)
	}
	switch {
	case len(o.Lower) == 0:
		return fail("missing lowerdir: %w", unix.EINVAL)
	case o.Upper != "" && o.Work == "":
		return fail("missing workdir: %w", unix.EINVAL)
	case o.Upper == "" && o.Work != "":
		return fail("workdir %q without upperdir: %w", o.Work, unix.EINVAL)
	case o.Upper == "" && len(o.Lower) < 2:
		return fail("at least 2 lowerdir are needed without upperdir: %w", unix.EINVAL)
	}
	return nil
}

// Dirs are an overlay's directories, open as descriptors of one process
// (O_PATH is enough), for a caller that finds them itself: in other
// namespaces than the overlay's, or with its own messages for those it
// cannot open.
type Dirs struct {
	// Lower are the lower directories, uppermost first.
	Lower []int
	// Upper and Work are the upper directory and its work directory, on
	// one mount; both -1 for a read-only overlay of two or more lower
	// directories.
	Upper, Work int
	// UserXattr is the userxattr option.
	UserXattr bool
}

// Open makes an overlay of the directories open in p as d; p must be
// privileged (EPERM), and its credentials are the mounter's. The
// descriptors stay p's: the overlay holds the files they name. The
// errors are New's.
func Open(p *vfs.Proc, d Dirs) (*FS, error) {
	if !p.Privileged() {
		return nil, unix.EPERM
	}
	fail := func(format string, args ...any) (*FS, error) {
		return nil, fmt.Errorf("overlay: "+format, args...)
	}
	switch {
	case len(d.Lower) == 0:
		return fail("missing lowerdir: %w", unix.EINVAL)
	case d.Upper >= 0 && d.Work < 0:
		return fail("missing workdir: %w", unix.EINVAL)
	case d.Upper < 0 && d.Work >= 0:
		return fail("workdir without upperdir: %w", unix.EINVAL)
	case d.Upper < 0 && len(d.Lower) < 2:
		return fail("at least 2 lowerdir are needed without upperdir: %w", unix.EINVAL)
	}
	fs := &FS{work: -1, whiteout: -1, whLinks: true, prefix: "trusted.overlay.",
		byUpper: map[uint64]weak.Pointer[node]{}, origins: map[*node]struct{}{}, tr: &tracker{descs: map[*refs]struct{}{}},
		traps: map[trapKey]struct{}{}}
	if d.UserXattr {
		fs.prefix = "user.overlay."
	}
	pin := func(fd int) error {
		b, err := p.Backing(fd)
		if err != nil {
			return err
		}
		fs.pins = append(fs.pins, b)
		return nil
	}
	ok := false
	defer func() {
		if !ok {
			fs.Shutdown()
		}
	}()
	var roots []real
	var upperRoot real
	if d.Upper >= 0 {
		if err := pin(d.Upper); err != nil {
			return nil, err
		}
		if err := pin(d.Work); err != nil {
			return nil, err
		}
		q, err := p.PrivateMount(d.Upper, d.Work)
		if err != nil {
			if err == unix.EXDEV {
				return fail("workdir and upperdir must reside under the same mount: %w", unix.EINVAL)
			}
			return nil, err
		}
		fs.upper = &layer{p: q}
		if err := fs.upper.setDev(0); err != nil {
			return nil, err
		}
		k, err := fs.setTrap(q, 0, "upperdir")
		if err != nil {
			return nil, err
		}
		if !fs.lockInUse(k) {
			reportInUse("upperdir")
		}
		if err := separate(q, 0, 1); err != nil {
			return fail("workdir and upperdir must be separate subtrees: %w", err)
		}
		if k, err = fs.setTrap(q, 1, "workdir"); err != nil {
			return nil, err
		}
		if !fs.lockInUse(k) {
			reportInUse("workdir")
		}
		if upperRoot, err = newReal(fs.upper, 0); err != nil {
			return nil, err
		}
		fs.rootRefs = append(fs.rootRefs, upperRoot)
		if err := fs.makeWorkdir(1); err != nil {
			return fail("workdir: %w", err)
		}
		if _, err := fs.setTrap(q, fs.work, "workdir"); err != nil {
			return nil, err
		}
	}
	for _, fd := range d.Lower {
		if err := pin(fd); err != nil {
			return nil, err
		}
		q, err := p.PrivateMount(fd)
		if err != nil {
			return nil, err
		}
		ly := &layer{p: q}
		fs.lowers = append(fs.lowers, ly)
		if err := ly.setDev(0); err != nil {
			return nil, err
		}
		k, err := fs.setTrap(q, 0, "lowerdir")
		if err != nil {
			return nil, err
		}
		if isInUse(k) {
			reportInUse("lowerdir")
		}
		r, err := newReal(ly, 0)
		if err != nil {
			return nil, err
		}
		fs.rootRefs = append(fs.rootRefs, r)
		roots = append(roots, r)
	}
	if fs.upper != nil {
		for fd, what := range []string{"upperdir", "workdir"} { // descriptors 0 and 1
			up, err := ancestors(fs.upper.p, fd)
			if err != nil {
				return nil, err
			}
			if fs.upper.anyInUse(up[1:]) {
				reportInUse(what)
			}
		}
	}
	fs.samefs = true
	for _, l := range fs.lowers {
		if fs.upper != nil && l.dev != fs.upper.dev || l.dev != fs.lowers[0].dev {
			fs.samefs = false
		}
		// A lower layer inside another layer or a work directory is
		// refused (ovl_check_overlapping_layers); one that holds another
		// is not, and its lookups stop at the trap.
		up, err := ancestors(l.p, 0)
		if err != nil {
			return nil, err
		}
		for _, ino := range up[1:] {
			if _, ok := fs.traps[trapKey{l.dev, ino}]; ok {
				return fail("overlapping lowerdir path: %w", unix.ELOOP)
			}
		}
		if l.anyInUse(up[1:]) {
			reportInUse("lowerdir")
		}
	}
	root, err := fs.newRoot(upperRoot, roots)
	if err != nil {
		return nil, err
	}
	fs.root = root
	ok = true
	return fs, nil
}

// setDev records the layer's st_dev from its root, open as fd.
func (l *layer) setDev(fd int) error {
	st, err := l.p.Fstat(fd)
	if err != nil {
		return errno(err)
	}
	l.dev = st.Dev
	return nil
}

// ancestors returns the identities (inode numbers) of the directory open
// as fd in p and of every directory above it, up to p's root.
func ancestors(p *vfs.Proc, fd int) ([]uint64, error) {
	var out []uint64
	path := ""
	for i := 0; i < 4096; i++ {
		st, err := p.Fstatat(fd, path, unix.AT_EMPTY_PATH)
		if err != nil {
			return nil, errno(err)
		}
		if len(out) > 0 && out[len(out)-1] == st.Ino {
			return out, nil // the root: its ".." is itself
		}
		out = append(out, st.Ino)
		if path == "" {
			path = ".."
		} else {
			path += "/.."
		}
	}
	return out, nil
}

// separate reports EINVAL when the directories open as a and b in p (one
// mount) are one inside the other or the same (ovl_workdir_ok).
func separate(p *vfs.Proc, a, b int) error {
	up, err := ancestors(p, a)
	if err != nil {
		return err
	}
	uq, err := ancestors(p, b)
	if err != nil {
		return err
	}
	for _, x := range up {
		if x == uq[0] {
			return unix.EINVAL
		}
	}
	for _, x := range uq {
		if x == up[0] {
			return unix.EINVAL
		}
	}
	return nil
}

// makeWorkdir makes the work directory, workdir/work, empty and with mode
// 0, as ovl_workdir_create does: what a crash left there (copies not yet
// renamed into place, directories being removed) is removed.
func (fs *FS) makeWorkdir(workdir int) error {
	p := fs.upper.p
	if st, err := p.Fstatat(workdir, "work", unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if err := removeAll(p, workdir, "work", st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
			return err
		}
	} else if errno(err) != unix.ENOENT {
		return errno(err)
	}
	if err := p.Mkdirat(workdir, "work", 0); err != nil {
		return errno(err)
	}
	fd, err := p.Openat(workdir, "work", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return errno(err)
	}
	fs.work = fd
	return nil
}

// removeAll removes name in the directory dirfd of p, and all below it
// when it is a directory.
func removeAll(p *vfs.Proc, dirfd int, name string, isDir bool) error {
	if !isDir {
		return errno(p.Unlinkat(dirfd, name, 0))
	}
	fd, err := p.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return errno(err)
	}
	for {
		ents, err := p.Getdents(fd)
		if err != nil {
			p.Close(fd)
			return errno(err)
		}
		for _, e := range ents {
			if e.Name == "." || e.Name == ".." {
				continue
			}
			if err := removeAll(p, fd, e.Name, e.Type == unix.DT_DIR); err != nil {
				p.Close(fd)
				return err
			}
		}
		if len(ents) == 0 {
			break
		}
	}
	p.Close(fd)
	return errno(p.Unlinkat(dirfd, name, unix.AT_REMOVEDIR))
}

// Root returns the overlay's root directory.
func (fs *FS) Root() vfs.Node { return fs.root.vnode() }

// Statfs reports the upper layer's figures (the uppermost lower layer's
// for a read-only overlay) with overlayfs's magic, as ovl_statfs does.
func (fs *FS) Statfs() (unix.Statfs_t, error) {
	l := fs.upper
	if l == nil {
		l = fs.lowers[0]
	}
	st, err := l.p.Fstatfs(0)
	if err != nil {
		return st, errno(err)
	}
	st.Type = superMagic
	st.Fsid = unix.Fsid{}
	return st, nil
}

// Shutdown closes every descriptor the overlay holds on its layers and
// lets their mounts go. The VFS calls it when the overlay is unmounted
// and its last file closed; a program that stops using an overlay it
// mounted with MNT_DETACH may call it itself, once its files are closed.
// A second call does nothing.
func (fs *FS) Shutdown() error {
	fs.shutdown.Do(fs.shutdownOnce)
	return nil
}

func (fs *FS) shutdownOnce() {
	fs.tr.closeAll()
	fs.whMu.Lock()
	if fs.whiteout >= 0 {
		fs.upper.p.Close(fs.whiteout)
		fs.whiteout = -1
	}
	fs.whMu.Unlock()
	for _, r := range fs.rootRefs {
		r.close()
	}
	fs.rootRefs = nil
	if fs.upper != nil {
		for _, fd := range []int{1, fs.work} {
			if fd >= 0 {
				fs.upper.p.Close(fd)
			}
		}
	}
	for _, b := range fs.pins {
		b.Release()
	}
	fs.pins = nil
	inUse.Lock()
	for _, k := range fs.locked {
		delete(inUse.dirs, k)
	}
	inUse.Unlock()
	fs.locked = nil
}
