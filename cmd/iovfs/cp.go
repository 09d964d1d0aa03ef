package main

// iovfs cp: GNU cp's rules between the host and images, in any direction.
// Each operand is a host path or IMAGE[@PART]:PATH; the destination's
// image is attached read-write (under its lock), the others read-only.
// Regular files are copied by one goroutine per core; directories and
// symbolic links by the walk, in order; directories get their times and
// modes last, deepest first.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/diskimage"
	"github.com/iovfs/iovfs/vfs"
)

const cpUsage = `usage: iovfs cp [-r] [-a] [-p] [-n] [-v] [--owner UID:GID] [--mode MODE] SRC... DEST

Copy files and directories as GNU cp does, where any operand may be a host
path or IMAGE[@PART]:PATH inside a disk image (ext2/3/4 or FAT; @N is
partition N, @NAME a GPT partition by name): host to image, image to host,
image to image. Paths inside an image never leave it (.. stops at its root,
absolute symlinks resolve inside it). An image written to is locked for
the copy; another writer is refused.

options:
  -r, -R, --recursive  copy directories recursively (symlinks are copied as links)
  -a, --archive        -r and keep modes, owners, times, xattrs, hard links, holes
  -p                   keep modes, owners and times
  -n, --no-clobber     do not overwrite an existing file
  -v, --verbose        print each file copied
  --owner UID:GID      owner of the copies (default: the invoking user, or the
                       source's with -a or -p)
  --mode MODE          permission bits of copied regular files (octal)
  -h, --help           show this help

A terminal gets one progress line on stderr (bytes, files, rate, time left).

examples:
  iovfs cp disk.img:/etc/hostname .             # image to host
  iovfs cp -a disk.img@2:/ ./rootfs             # a whole partition, kept as it is
  iovfs cp -r ./build disk.img:/opt/app         # host to image
  iovfs cp --owner 0:0 --mode 644 motd disk.img:/etc/motd
`

type cpOpts struct {
	recursive, preserve, archive, noClobber, verbose bool
	owner                                            *[2]int
	mode                                             *uint32
}

type endpoint struct {
	s       side
	path    string // host path, or namespace path
	display string // as the user gave it
	img     bool
}

func runCp(args []string, stdout, stderr io.Writer) int {
	var o cpOpts
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case a == "-h" || a == "--help":
			fmt.Fprint(stdout, cpUsage)
			return 0
		case a == "--recursive":
			o.recursive = true
		case a == "--archive":
			o.archive, o.recursive, o.preserve = true, true, true
		case a == "--no-clobber":
			o.noClobber = true
		case a == "--verbose":
			o.verbose = true
		case a == "--owner" || strings.HasPrefix(a, "--owner="):
			v, ok := optValue(args, &i, "--owner")
			if !ok {
				return usageError(stderr, "cp", "option '--owner' requires an argument")
			}
			u, g, found := strings.Cut(v, ":")
			uid, err1 := strconv.Atoi(u)
			gid, err2 := strconv.Atoi(g)
			if !found || err1 != nil || err2 != nil || uid < 0 || gid < 0 {
				return usageError(stderr, "cp", fmt.Sprintf("invalid owner '%s': want UID:GID", v))
			}
			o.owner = &[2]int{uid, gid}
		case a == "--mode" || strings.HasPrefix(a, "--mode="):
			v, ok := optValue(args, &i, "--mode")
			if !ok {
				return usageError(stderr, "cp", "option '--mode' requires an argument")
			}
			m, err := strconv.ParseUint(v, 8, 32)
			if err != nil || m > 0o7777 {
				return usageError(stderr, "cp", fmt.Sprintf("invalid mode '%s': want octal permission bits", v))
			}
			mm := uint32(m)
			o.mode = &mm
		case strings.HasPrefix(a, "--"):
			return usageError(stderr, "cp", fmt.Sprintf("unrecognized option '%s'", a))
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, c := range a[1:] {
				switch c {
				case 'r', 'R':
					o.recursive = true
				case 'a':
					o.archive, o.recursive, o.preserve = true, true, true
				case 'p':
					o.preserve = true
				case 'n':
					o.noClobber = true
				case 'v':
					o.verbose = true
				default:
					return usageError(stderr, "cp", fmt.Sprintf("invalid option -- '%c'", c))
				}
			}
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) == 0 {
		return usageError(stderr, "cp", "missing file operand")
	}
	if len(operands) == 1 {
		return usageError(stderr, "cp", fmt.Sprintf("missing destination file operand after '%s'", operands[0]))
	}
	c := &copier{o: o, stderr: stderr, stdout: stdout, first: map[[3]uint64]string{}}
	status := c.run(operands)
	if err := closeImages(); err != nil {
		fmt.Fprintf(stderr, "iovfs cp: %v\n", err)
		status = 1
	}
	return status
}

func optValue(args []string, i *int, name string) (string, bool) {
	a := args[*i]
	if v, ok := strings.CutPrefix(a, name+"="); ok {
		return v, true
	}
	if *i+1 >= len(args) {
		return "", false
	}
	*i++
	return args[*i], true
}

// copier is one run of cp.
type copier struct {
	o              cpOpts
	stdout, stderr io.Writer
	p              *vfs.Proc
	images         map[string]*diskimage.Image
	uid, gid       int // the invoking user, owner of copies by default
	umask          uint32

	// mu protects errs, first, links, the progress counters and the
	// writes to stdout and stderr.
	mu      sync.Mutex
	errs    int
	first   map[[3]uint64]string // (side, dev, ino) of a multiply linked source -> its first copy
	bytes   int64
	files   int64
	total   int64
	started time.Time
	shown   time.Time

	jobs chan cpJob
	wg   sync.WaitGroup
	// inline is the buffer of a copy that runs its file copies in the
	// walk itself (submit), without workers; nil when workers do.
	inline []byte
	dirs   []cpDir
	// arenas are free batch buffers of read-aheads (under mu).
	arenas [][]byte
}

type cpJob struct {
	src, dst   endpoint
	st         vfs.Stat
	sidx       int
	existedDst bool
	statLater  bool // st is not known yet: copyFile stats the opened file
	// pre is the file read ahead (statLater jobs of an inline copy
	// from the host), or nil.
	pre *readFile
}

type cpDir struct {
	src, dst endpoint
	st       vfs.Stat
	created  bool
}

func (c *copier) fail(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs++
	c.clearProgress()
	fmt.Fprintf(c.stderr, "iovfs cp: "+format+"\n", a...)
}

func errMsg(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		s := e.Error()
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return err.Error()
}

// endpointOf makes the endpoint of an operand. Image operands are
// resolved inside their image; follow says whether a final symlink is
// followed.
func (c *copier) endpointOf(op string, follow bool) (endpoint, error) {
	spec, path, ok := splitImageOperand(op)
	if !ok {
		e := endpoint{s: hostSide{}, path: op, display: op}
		if follow {
			if r, err := filepath.EvalSymlinks(op); err == nil {
				e.path = r
			}
		}
		return e, nil
	}
	im := c.images[spec]
	np, err := im.Path(path, follow || strings.HasSuffix(path, "/"))
	if err != nil {
		return endpoint{}, err
	}
	return endpoint{s: nsSide{c.p}, path: np, display: op, img: true}, nil
}

// submit has j copied: by a worker, or here when the copy runs inline.
func (c *copier) submit(j cpJob) {
	if c.inline != nil {
		c.copyFile(j, c.inline)
		return
	}
	c.jobs <- j
}

func (c *copier) run(operands []string) int {
	c.uid, c.gid = os.Geteuid(), os.Getegid()
	c.umask = uint32(unix.Umask(0))
	unix.Umask(int(c.umask))
	dest := operands[len(operands)-1]
	srcs := operands[:len(operands)-1]
	// Attach the images: the destination's read-write.
	c.images = map[string]*diskimage.Image{}
	var err error
	if c.p, err = newProc(); err != nil {
		fmt.Fprintf(c.stderr, "iovfs cp: %v\n", err)
		return 1
	}
	destSpec, _, destImg := splitImageOperand(dest)
	for _, op := range operands {
		spec, _, ok := splitImageOperand(op)
		if !ok || c.images[spec] != nil {
			continue
		}
		im, err := attachImage(c.p, spec, "", destImg && spec == destSpec)
		if err != nil {
			fmt.Fprintf(c.stderr, "iovfs cp: %v\n", err)
			return 1
		}
		c.images[spec] = im
	}
	// The destination: an existing directory (followed) takes the
	// sources by their names.
	dstDir, derr := c.endpointOf(dest, true)
	destIsDir := false
	if derr == nil {
		if st, err := dstDir.s.stat(dstDir.path); err == nil && st.IsDir() {
			destIsDir = true
		}
	}
	if len(srcs) > 1 && !destIsDir {
		if derr != nil || !errors.Is(statErr(dstDir), syscall.ENOENT) {
			fmt.Fprintf(c.stderr, "iovfs cp: target '%s' is not a directory\n", dest)
		} else {
			fmt.Fprintf(c.stderr, "iovfs cp: target '%s': No such file or directory\n", dest)
		}
		return 1
	}
	if isTerminal(c.stderr) {
		c.started = time.Now()
		for _, s := range srcs {
			if e, err := c.endpointOf(s, !c.o.recursive); err == nil {
				c.total += sizeOf(e.s, e.path, c.o.recursive)
			}
		}
	}
	c.jobs = make(chan cpJob, 256)
	workers := max(1, runtime.NumCPU())
	if im := c.images[destSpec]; im != nil && im.FSType == "vfat" {
		// A FAT volume serialises its writers on one lock: workers
		// only wait for it, and handing each file to one costs a
		// wake-up of another thread. The walk copies them itself.
		workers = 0
		c.inline = make([]byte, raArena)
	}
	for range workers {
		c.wg.Go(func() {
			buf := make([]byte, 1<<20)
			for j := range c.jobs {
				c.copyFile(j, buf)
			}
		})
	}
	for i, s := range srcs {
		src, err := c.endpointOf(s, !c.o.recursive)
		if err != nil {
			c.fail("cannot stat '%s': %s", s, errMsg(err))
			continue
		}
		var st vfs.Stat
		if c.o.recursive && !strings.HasSuffix(s, "/") {
			st, err = src.s.lstat(src.path)
		} else {
			st, err = src.s.stat(src.path)
		}
		if err != nil {
			c.fail("cannot stat '%s': %s", s, errMsg(err))
			continue
		}
		if st.IsDir() && !c.o.recursive {
			c.fail("-r not specified; omitting directory '%s'", s)
			continue
		}
		var dst endpoint
		if destIsDir {
			base := filepath.Base(strings.TrimRight(src.path, "/"))
			dst = endpoint{s: dstDir.s, path: strings.TrimSuffix(dstDir.path, "/") + "/" + base, display: strings.TrimSuffix(dest, "/") + "/" + base, img: dstDir.img}
		} else {
			dst, err = c.endpointOf(dest, false)
			if err != nil {
				what := "regular file"
				if st.IsDir() {
					what = "directory"
				}
				c.fail("cannot create %s '%s': %s", what, dest, errMsg(err))
				continue
			}
			if strings.HasSuffix(dest, "/") && !st.IsDir() {
				c.fail("cannot create regular file '%s': Not a directory", dest)
				continue
			}
		}
		if st.IsDir() && dst.s == src.s && within(dst.path, src.path) {
			c.fail("cannot copy a directory, '%s', into itself, '%s'", s, dst.display)
			continue
		}
		src.display = s
		c.copy(src, dst, st, i, true)
	}
	close(c.jobs)
	c.wg.Wait()
	for i := len(c.dirs) - 1; i >= 0; i-- {
		d := c.dirs[i]
		c.attrs(d.src, d.dst, d.st, true, d.created)
	}
	c.mu.Lock()
	if !c.started.IsZero() {
		// The final figures stay on the line.
		c.shown = time.Time{}
		c.draw(time.Now())
		fmt.Fprintln(c.stderr)
	}
	c.mu.Unlock()
	if c.errs > 0 {
		return 1
	}
	return 0
}

func statErr(e endpoint) error {
	_, err := e.s.stat(e.path)
	return err
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// copy copies src (whose status is st) to dst.
func (c *copier) copy(src, dst endpoint, st vfs.Stat, sidx int, top bool) {
	dst0, derr := dst.s.lstat(dst.path)
	exists := derr == nil
	if exists && src.s == dst.s && dst0.Dev == st.Dev && dst0.Ino == st.Ino {
		c.fail("'%s' and '%s' are the same file", src.display, dst.display)
		return
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		created := false
		if exists && !dst0.IsDir() {
			c.fail("cannot overwrite non-directory '%s' with directory '%s'", dst.display, src.display)
			return
		}
		if !exists {
			// Made searchable and writable for the copy; the final mode
			// is set at the end.
			if err := dst.s.mkdir(dst.path, st.Mode&0o777|0o700); err != nil {
				c.fail("cannot create directory '%s': %s", dst.display, errMsg(err))
				return
			}
			created = true
		}
		c.dirs = append(c.dirs, cpDir{src, dst, st, created})
		names, types, err := src.s.readDir(src.path)
		if err != nil {
			c.fail("cannot access '%s': %s", src.display, errMsg(err))
			return
		}
		var ra *readAhead
		if c.inline != nil && created && !src.img {
			var paths []string
			for i, n := range names {
				if types[i] == unix.DT_REG {
					paths = append(paths, src.path+"/"+n)
				}
			}
			if readAheadWorth(len(paths)) {
				ra = c.startReadAhead(src.s, paths)
				defer ra.close()
			}
		}
		for i, n := range names {
			s := endpoint{s: src.s, path: src.path + "/" + n, display: src.display + "/" + n, img: src.img}
			d := endpoint{s: dst.s, path: dst.path + "/" + n, display: dst.display + "/" + n, img: dst.img}
			if types[i] == unix.DT_REG && created {
				// A regular file into a directory made by this copy:
				// the worker stats what it opens (a lookup in a large
				// directory is the walk's main cost).
				j := cpJob{src: s, dst: d, sidx: sidx, statLater: true}
				if ra != nil {
					j.pre = ra.next()
				}
				c.submit(j)
				continue
			}
			est, err := s.s.lstat(s.path)
			if err != nil {
				c.fail("cannot stat '%s': %s", s.display, errMsg(err))
				continue
			}
			c.copy(s, d, est, sidx, false)
		}
	case unix.S_IFREG:
		if exists && dst0.IsDir() {
			c.fail("cannot overwrite directory '%s' with non-directory", dst.display)
			return
		}
		if exists && c.o.noClobber {
			return
		}
		c.submit(cpJob{src: src, dst: dst, st: st, sidx: sidx, existedDst: exists})
	case unix.S_IFLNK:
		if exists && c.o.noClobber {
			return
		}
		t, err := src.s.readlink(src.path)
		if err != nil {
			c.fail("cannot read symbolic link '%s': %s", src.display, errMsg(err))
			return
		}
		if exists {
			if dst0.IsDir() {
				c.fail("cannot overwrite directory '%s' with non-directory", dst.display)
				return
			}
			dst.s.unlink(dst.path)
		}
		if err := dst.s.symlink(t, dst.path); err != nil {
			c.fail("cannot create symbolic link '%s': %s", dst.display, errMsg(err))
			return
		}
		c.verbose(src, dst)
		c.attrs(src, dst, st, false, true)
	default:
		if !c.o.recursive {
			c.fail("cannot open '%s' for reading: not a regular file", src.display)
			return
		}
		if exists {
			if c.o.noClobber {
				return
			}
			dst.s.unlink(dst.path)
		}
		if err := dst.s.mknod(dst.path, st.Mode&(unix.S_IFMT|0o777), st.Rdev); err != nil {
			c.fail("cannot create special file '%s': %s", dst.display, errMsg(err))
			return
		}
		c.verbose(src, dst)
		c.attrs(src, dst, st, false, true)
	}
}

func (c *copier) verbose(src, dst endpoint) {
	if !c.o.verbose {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearProgress()
	fmt.Fprintf(c.stdout, "'%s' -> '%s'\n", src.display, dst.display)
}

// copyFile copies one regular file. With -a, hard links among the
// sources stay hard links, and all-zero blocks are left as holes; a file
// is always cut to the source's size.
func (c *copier) copyFile(j cpJob, buf []byte) {
	src, dst, st := j.src, j.dst, j.st
	var in file
	var data []byte // the whole file, read ahead
	if pre := j.pre; pre != nil {
		switch {
		case pre.op == "open" || pre.op == "stat":
			if pre.op == "open" {
				c.fail("cannot open '%s' for reading: %s", src.display, errMsg(pre.err))
			} else {
				c.fail("cannot stat '%s': %s", src.display, errMsg(pre.err))
			}
			return
		case pre.notReg:
			c.fail("'%s' is not a regular file any more", src.display)
			return
		}
		st, in, data = pre.st, pre.f, pre.data
		pre.f = nil
	} else if j.statLater {
		var err error
		if in, err = src.s.open(src.path); err != nil {
			c.fail("cannot open '%s' for reading: %s", src.display, errMsg(err))
			return
		}
		if st, err = in.fstat(); err != nil || !st.IsRegular() {
			in.Close()
			if err != nil {
				c.fail("cannot stat '%s': %s", src.display, errMsg(err))
			} else {
				c.fail("'%s' is not a regular file any more", src.display)
			}
			return
		}
	}
	if c.o.archive && st.Nlink > 1 {
		key := [3]uint64{uint64(j.sidx) << 1, st.Dev, st.Ino}
		if src.img {
			key[0] |= 1
		}
		c.mu.Lock()
		first, seen := c.first[key]
		if !seen {
			c.first[key] = dst.path
		}
		c.mu.Unlock()
		if seen {
			if in != nil {
				in.Close()
			}
			if j.existedDst {
				dst.s.unlink(dst.path)
			}
			if err := dst.s.link(first, dst.path); err != nil {
				c.fail("cannot create hard link '%s': %s", dst.display, errMsg(err))
			}
			c.verbose(src, dst)
			return
		}
	}
	if in == nil && data == nil {
		var err error
		if in, err = src.s.open(src.path); err != nil {
			c.fail("cannot open '%s' for reading: %s", src.display, errMsg(err))
			return
		}
	}
	if in != nil {
		defer in.Close()
	}
	mode := st.Mode & 0o777 &^ c.umask
	if c.o.preserve {
		mode = st.Mode & 0o777
	}
	if c.o.mode != nil {
		mode = *c.o.mode & 0o777
	}
	out, err := dst.s.create(dst.path, mode, false)
	if err != nil {
		c.fail("cannot create regular file '%s': %s", dst.display, errMsg(err))
		return
	}
	ok := true
	end := int64(0)
	// put writes b at off, leaving holes for its all-zero blocks.
	put := func(b []byte, off int64) bool {
		const blk = 4096
		for i := 0; i < len(b); {
			e := min(i+blk, len(b))
			if allZero(b[i:e]) {
				i = e
				continue
			}
			k := e
			for k < len(b) && !allZero(b[k:min(k+blk, len(b))]) {
				k = min(k+blk, len(b))
			}
			if err := writeAll(out, b[i:k], off+int64(i)); err != nil {
				c.fail("error writing '%s': %s", dst.display, errMsg(err))
				return false
			}
			end = off + int64(k)
			i = k
		}
		return true
	}
	if in == nil {
		ok = put(data, 0)
		c.progress(int64(len(data)), 0)
		if ok && j.pre.err != nil {
			c.fail("error reading '%s': %s", src.display, errMsg(j.pre.err))
			ok = false
		}
	}
	for off := int64(0); in != nil && off < st.Size; {
		n, err := in.ReadAt(buf, off)
		if err != nil && n <= 0 {
			c.fail("error reading '%s': %s", src.display, errMsg(err))
			ok = false
			break
		}
		if n <= 0 {
			break
		}
		if ok = put(buf[:n], off); !ok {
			break
		}
		off += int64(n)
		c.progress(int64(n), 0)
	}
	if ok && end != st.Size {
		if err := out.Truncate(st.Size); err != nil {
			c.fail("error writing '%s': %s", dst.display, errMsg(err))
		}
	}
	if err := out.Close(); err != nil && ok {
		c.fail("error writing '%s': %s", dst.display, errMsg(err))
	}
	c.progress(0, 1)
	c.verbose(src, dst)
	c.attrs(src, dst, st, false, !j.existedDst)
}

func writeAll(f file, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := f.WriteAt(b, off)
		if err != nil {
			return err
		}
		if n == 0 {
			return syscall.EIO
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// attrs sets what the options keep on a copy: owner (with -a or -p, or
// --owner; a new copy in an image otherwise belongs to the invoking
// user), mode (new directories; -p), times (-p), xattrs (-a).
func (c *copier) attrs(src, dst endpoint, st vfs.Stat, dir, created bool) {
	link := st.Mode&unix.S_IFMT == unix.S_IFLNK
	switch {
	case c.o.owner != nil:
		if err := dst.s.lchown(dst.path, c.o.owner[0], c.o.owner[1]); err != nil {
			c.fail("failed to set the owner of '%s': %s", dst.display, errMsg(err))
		}
	case c.o.preserve:
		if err := dst.s.lchown(dst.path, int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, syscall.EPERM) {
			c.fail("failed to preserve ownership for '%s': %s", dst.display, errMsg(err))
		}
	case created && dst.img && (c.uid != c.p.Geteuid() || c.gid != c.p.Getegid()):
		// The image's files are made by the namespace's root: they
		// go to the user running cp, as its own creates would. When
		// that user is root they are its already (and a file made in
		// a set-group-ID directory keeps the directory's group).
		dst.s.lchown(dst.path, c.uid, c.gid)
	}
	if c.o.archive {
		c.copyXattrs(src, dst)
	}
	if !link {
		switch {
		case c.o.preserve:
			if err := dst.s.chmod(dst.path, st.Mode&0o7777); err != nil && !errors.Is(err, syscall.EPERM) {
				c.fail("preserving permissions for '%s': %s", dst.display, errMsg(err))
			}
		case dir && created:
			dst.s.chmod(dst.path, st.Mode&0o777&^c.umask)
		case !dir && c.o.mode != nil:
			dst.s.chmod(dst.path, *c.o.mode)
		}
	}
	if c.o.preserve {
		if err := dst.s.lutimes(dst.path, st.Atime, st.Mtime); err != nil && !(link && errors.Is(err, syscall.EPERM)) {
			c.fail("preserving times for '%s': %s", dst.display, errMsg(err))
		}
	}
}

func (c *copier) copyXattrs(src, dst endpoint) {
	names, err := src.s.listxattr(src.path)
	if err != nil {
		return
	}
	for _, n := range names {
		val, err := src.s.getxattr(src.path, n)
		if err != nil {
			continue
		}
		if err := dst.s.setxattr(dst.path, n, val); err != nil && !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.EPERM) {
			c.fail("setting attribute '%s' for '%s': %s", n, dst.display, errMsg(err))
		}
	}
}

// Progress: one line on a terminal, redrawn at most five times a second.

func (c *copier) progress(bytes, files int64) {
	if c.started.IsZero() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes += bytes
	c.files += files
	now := time.Now()
	if now.Sub(c.shown) < 200*time.Millisecond {
		return
	}
	c.draw(now)
}

// draw redraws the progress line; mu is held.
func (c *copier) draw(now time.Time) {
	c.shown = now
	el := now.Sub(c.started).Seconds()
	rate := float64(c.bytes) / max(el, 1e-3)
	line := fmt.Sprintf("%s copied, %d files, %s/s", human(c.bytes), c.files, human(int64(rate)))
	if c.total > 0 && rate > 0 {
		line += fmt.Sprintf(", %s left", (time.Duration(float64(c.total-c.bytes)/rate) * time.Second).Round(time.Second))
	}
	fmt.Fprintf(c.stderr, "\r%s\x1b[K", line)
}

// clearProgress erases the progress line; mu is held.
func (c *copier) clearProgress() {
	if !c.started.IsZero() && !c.shown.IsZero() {
		fmt.Fprint(c.stderr, "\r\x1b[K")
	}
}

func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// sizeOf sums the sizes of the regular files at path, for the progress
// line's time left.
func sizeOf(s side, path string, rec bool) int64 {
	st, err := s.lstat(path)
	if err != nil {
		return 0
	}
	if st.IsRegular() {
		return st.Size
	}
	if !st.IsDir() || !rec {
		return 0
	}
	names, _, _ := s.readDir(path)
	var n int64
	for _, name := range names {
		n += sizeOf(s, path+"/"+name, rec)
	}
	return n
}
