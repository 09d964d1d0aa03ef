// Package diskimage attaches a disk image file of the host to a process's
// namespace, as a rootless tool needs it: IMAGE[@PART] names the whole
// image or one partition of it (a number from 1, as loopNpN, or a GPT
// partition's name), the file system in it (ext2/3/4 or FAT) is found and
// mounted, read-only or read-write, and paths inside it are resolved with
// RESOLVE_IN_ROOT at its root, so that no path leaves the image.
//
// One writer per image: an image is opened for writing only under an
// exclusive OFD lock on the image file, and read-only users take a shared
// one, as QEMU locks its images; a second writer (another process, or
// another attach in the same process) is refused with an error naming
// the image and, when it can be found, the holder.
//
// An ext image whose journal needs recovery is shown read-only as the
// journal's committed state, replayed into an in-memory overlay of the
// device (block.Overlay): the image file is not changed.
package diskimage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/devfs"
	"github.com/iovfs/iovfs/vfs"
)

// Spec names an image and optionally a partition: IMAGE[@PART].
type Spec struct {
	Path string
	// Part is "" for the whole image, a partition number ("1") or a GPT
	// partition name.
	Part string
}

func (s Spec) String() string {
	if s.Part == "" {
		return s.Path
	}
	return s.Path + "@" + s.Part
}

// ParseSpec splits IMAGE[@PART]. A string naming an existing file is the
// whole image even if it contains '@'.
func ParseSpec(s string) Spec {
	if _, err := os.Stat(s); err == nil {
		return Spec{Path: s}
	}
	if i := strings.LastIndexByte(s, '@'); i > 0 {
		return Spec{Path: s[:i], Part: s[i+1:]}
	}
	return Spec{Path: s}
}

// Options say how to attach an image.
type Options struct {
	// Write opens the image for writing and mounts it read-write.
	Write bool
	// Target is where the file system is mounted in the namespace;
	// empty: a fresh directory under /mnt.
	Target string
	// DevFS is the process's /dev, for the overlay device a journal
	// replay needs; without it such an image is shown without replay.
	DevFS *devfs.FS
	// Notef reports what the user should know once (a journal replayed
	// in memory, a damaged primary GPT); nil drops it.
	Notef func(format string, args ...any)
}

// Image is an attached image.
type Image struct {
	Spec   Spec
	FSType string // "ext4" or "vfat"
	Target string // the mount point in the namespace
	// Start and Size are the byte range of the file system in the file.
	Start, Size int64
	// Replayed reports a journal replayed in memory.
	Replayed bool

	p      *vfs.Proc
	file   *os.File
	rootfd int
}

var attachCount atomic.Int64

// Attach opens, locks and mounts spec's file system in p.
func Attach(p *vfs.Proc, spec Spec, o Options) (*Image, error) {
	if o.Notef == nil {
		o.Notef = func(string, ...any) {}
	}
	mode := os.O_RDONLY
	if o.Write {
		mode = os.O_RDWR
	}
	f, err := os.OpenFile(spec.Path, mode, 0)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() && fi.Mode()&os.ModeDevice == 0 {
		return nil, fmt.Errorf("%s: not an image file", spec.Path)
	}
	size := fi.Size()
	if fi.Mode()&os.ModeDevice != 0 {
		if s, err := f.Seek(0, 2); err == nil {
			size = s
		}
	}
	im := &Image{Spec: spec, p: p, file: f, Start: 0, Size: size, rootfd: -1}
	if spec.Part != "" {
		part, err := findPart(f, size, spec, o.Notef)
		if err != nil {
			return nil, err
		}
		im.Start, im.Size = part.Start, part.Size
	}
	// The lock covers what is attached: the whole file, or the
	// partition's bytes, so that two partitions have a writer each.
	lockLen := im.Size
	if spec.Part == "" {
		lockLen = 0 // to the end of the file, however it grows
	}
	if err := LockRange(f, o.Write, spec.String(), im.Start, lockLen); err != nil {
		return nil, err
	}
	typ, recover, err := detect(f, im.Start, im.Size)
	if err != nil {
		if spec.Part == "" {
			if t, terr := block.ReadTable(f, size, 512, block.TableOptions{ForceGPT: true}); terr == nil && len(t.Parts) > 0 {
				return nil, fmt.Errorf("%s: %v; it holds a partition table: name a partition as %s@N (iovfs parts %s)", spec, err, spec.Path, spec.Path)
			}
		}
		return nil, fmt.Errorf("%s: %v", spec, err)
	}
	im.FSType = typ
	dev, hold, err := im.loop(o.Write)
	if err != nil {
		return nil, err
	}
	defer p.Close(hold)
	target := o.Target
	if target == "" {
		target = fmt.Sprintf("/mnt/image%d", attachCount.Add(1))
	}
	if err := mkdirAll(p, target); err != nil {
		return nil, err
	}
	if err := im.mount(dev, target, o, recover); err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	im.Target = target
	im.rootfd, err = p.Open(target, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		p.Unmount(target, unix.MNT_DETACH)
		return nil, err
	}
	ok = true
	return im, nil
}

// Close unmounts the file system (committing what was written) and
// drops the lock.
func (im *Image) Close() error {
	var err error
	if im.rootfd >= 0 {
		im.p.Close(im.rootfd)
		im.rootfd = -1
		err = im.p.Unmount(im.Target, 0)
		if err != nil {
			im.p.Unmount(im.Target, unix.MNT_DETACH)
		}
	}
	if cerr := im.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// Root returns an O_PATH descriptor of the file system's root.
func (im *Image) Root() int { return im.rootfd }

// Open resolves path at the image's root with RESOLVE_IN_ROOT (".." at
// the root stays there, absolute symlinks resolve inside the image; an
// empty path is the root) and opens it with flags and mode.
func (im *Image) Open(path string, flags int, mode uint32, resolve uint64) (int, error) {
	if path == "" {
		path = "."
	}
	how := &unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: unix.RESOLVE_IN_ROOT | resolve}
	for {
		fd, err := im.p.Openat2(im.rootfd, path, how)
		if errors.Is(err, syscall.EAGAIN) {
			continue // a rename raced a "..": walk again
		}
		return fd, err
	}
}

// Path returns the namespace path of path inside the image, resolved as
// RESOLVE_IN_ROOT resolves it at the image's root: ".." at the root
// stays there, symlinks (absolute ones from the image's root) are
// followed inside the image, an empty path or "//" is the root. The last
// component is followed only if follow (or path ends in '/'); a missing
// last component is allowed (for creating it). The path is computed
// component by component and checked against Openat2's answer with
// RESOLVE_IN_ROOT: both must name the same file. The result names that
// file as long as nothing renames its directories.
func (im *Image) Path(path string, follow bool) (string, error) {
	if strings.HasSuffix(path, "/") {
		follow = true
	}
	np, err := im.walk(path, follow)
	if err != nil {
		return "", err
	}
	// The kernel-style resolution is the authority.
	flags := unix.O_PATH
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := im.Open(path, flags, 0, 0)
	if errors.Is(err, syscall.ENOENT) {
		// A last component to be created: its directory must agree.
		dir, base := splitLast(path)
		if base == "" || base == "." || base == ".." {
			return "", err
		}
		dfd, derr := im.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0, 0)
		if derr != nil {
			return "", derr
		}
		defer im.p.Close(dfd)
		if err := im.same(dfd, parentOf(np)); err != nil {
			return "", err
		}
		if _, err := im.p.Lstat(np); err == nil {
			return "", syscall.EAGAIN // it appeared meanwhile
		}
		return np, nil
	}
	if err != nil {
		return "", err
	}
	defer im.p.Close(fd)
	if err := im.same(fd, np); err != nil {
		return "", err
	}
	return np, nil
}

func parentOf(np string) string {
	i := strings.LastIndexByte(np, '/')
	if i <= 0 {
		return "/"
	}
	return np[:i]
}

// same checks that the namespace path np names the file open as fd.
func (im *Image) same(fd int, np string) error {
	a, err := im.p.Fstat(fd)
	if err != nil {
		return err
	}
	b, err := im.p.Lstat(np)
	if err != nil {
		return err
	}
	if a.Dev != b.Dev || a.Ino != b.Ino {
		return syscall.EAGAIN // renamed under the walk
	}
	return nil
}

// walk resolves path component by component from the image's root,
// keeping the resolved prefix free of symlinks, so that ".." is its
// parent, never above the root.
func (im *Image) walk(path string, follow bool) (string, error) {
	root := strings.TrimSuffix(im.Target, "/")
	cur := root
	rest := strings.Split(path, "/")
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur != root {
				cur = parentOf(cur)
			}
			continue
		}
		next := cur + "/" + c
		last, slash := true, false
		for _, r := range rest {
			if r != "" && r != "." {
				last = false
				break
			}
			slash = true
		}
		st, err := im.p.Lstat(next)
		if err != nil {
			if errors.Is(err, syscall.ENOENT) && last {
				return next, nil
			}
			return "", err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK && (!last || follow || slash) {
			if links++; links > 40 {
				return "", syscall.ELOOP
			}
			t, err := im.p.Readlink(next)
			if err != nil {
				return "", err
			}
			if strings.HasPrefix(t, "/") {
				cur = root
			}
			rest = append(strings.Split(t, "/"), rest...)
			continue
		}
		if !last && !st.IsDir() {
			return "", syscall.ENOTDIR
		}
		cur = next
	}
	return cur, nil
}

// splitLast splits path into its directory and last component, ignoring
// trailing slashes ("a/b/" is "a" and "b"; "/" is "/" and "").
func splitLast(path string) (string, string) {
	t := strings.TrimRight(path, "/")
	if t == "" {
		return "/", ""
	}
	i := strings.LastIndexByte(t, '/')
	if i < 0 {
		return ".", t
	}
	if i == 0 {
		return "/", t[1:]
	}
	return t[:i], t[i+1:]
}

// Lock takes an OFD lock on the whole of f: exclusive for a writer,
// shared for a reader. A conflict gives an error naming the image and,
// when it can be found, the process that holds the lock.
//
// A holder that is closing the image (an iovfs process past MarkClosing,
// as "iovfs mount" is once the kernel has unmounted it) is waited for,
// up to ClosingWait, since umount(8) returns before the mount's server
// has written the image back and let go of it; so is a holder that no
// process shows (one exiting), up to UnseenWait. Any other holder is
// looked at again for SettleWait before the refusal: an "iovfs mount"
// learns that the kernel has unmounted it a moment after umount(8) has
// returned, and marks itself closing only then.
func Lock(f *os.File, write bool, name string) error {
	return LockRange(f, write, name, 0, 0)
}

// How long Lock waits for a holder closing the image, for one that no
// process shows, and for any other holder to become one of those.
const (
	ClosingWait = time.Minute
	UnseenWait  = 2 * time.Second
	SettleWait  = 300 * time.Millisecond
)

// closingComm is the name MarkClosing gives the process (at most 15
// bytes, the kernel's TASK_COMM_LEN).
const closingComm = "iovfs-closing"

// MarkClosing tells other iovfs processes that this one is closing the
// images it holds and will let go of them without anyone's help: their
// Lock waits for it (up to ClosingWait) instead of refusing at once. It
// renames the process (its main thread's comm, as ps shows it).
func MarkClosing() error {
	return os.WriteFile("/proc/self/comm", []byte(closingComm), 0)
}

// LockRange is Lock on the bytes [start, start+length) of f (length 0:
// to the end of the file).
func LockRange(f *os.File, write bool, name string, start, length int64) error {
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: start, Len: length}
	if write {
		lk.Type = unix.F_WRLCK
	}
	var hs []holder
	first := time.Now()
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) {
			return fmt.Errorf("%s: cannot lock the image: %w", name, err)
		}
		hs = holders(f)
		wait := ClosingWait
		for _, h := range hs {
			if !h.closing {
				wait = SettleWait
			}
		}
		if len(hs) == 0 {
			wait = UnseenWait
		}
		// Each look measures its allowance from the first, so that a
		// holder seen late as closing gets the whole of ClosingWait.
		if time.Since(first) > wait {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	what := "in use by a writer"
	if write {
		what = "in use"
		probe := unix.Flock_t{Type: unix.F_WRLCK, Start: start, Len: length}
		if unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &probe) == nil && probe.Type == unix.F_RDLCK {
			what = "open for reading"
		}
	}
	msg := fmt.Sprintf("%s: %s; refusing to open it %s", name, what, map[bool]string{true: "for writing", false: "while it is written"}[write])
	if len(hs) > 0 {
		var who []string
		for _, h := range hs {
			who = append(who, h.who)
		}
		msg += " (held by " + strings.Join(who, "; ") + ")"
	}
	return &LockError{Msg: msg}
}

// LockError is the refusal of a second writer.
type LockError struct{ Msg string }

func (e *LockError) Error() string { return e.Msg }

// Unwrap makes errors.Is(err, syscall.EBUSY) hold.
func (e *LockError) Unwrap() error { return syscall.EBUSY }

// A holder is a process holding an OFD lock on an image.
type holder struct {
	who     string // "pid N: its command line", or "pid N, this process"
	closing bool   // past MarkClosing
}

// holders lists the processes holding OFD locks on f's file, from
// /proc/*/fdinfo (an OFD lock's owner is an open file, whose fdinfo lists
// its locks).
func holders(f *os.File) []holder {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return nil
	}
	key := fmt.Sprintf("%02x:%02x:%d ", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	procs, _ := filepath.Glob("/proc/[0-9]*/fdinfo/*")
	seen := map[string]bool{}
	var out []holder
	for _, fi := range procs {
		b, err := os.ReadFile(fi)
		if err != nil || !bytes.Contains(b, []byte("OFDLCK")) || !bytes.Contains(b, []byte(key)) {
			continue
		}
		pid := strings.Split(fi, "/")[2]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		h := holder{who: "pid " + pid}
		if pid == strconv.Itoa(os.Getpid()) {
			h.who += ", this process"
		} else if c, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil && len(c) > 0 {
			h.who += ": " + strings.TrimSpace(strings.ReplaceAll(string(c), "\x00", " "))
		}
		if c, err := os.ReadFile("/proc/" + pid + "/comm"); err == nil && strings.TrimSpace(string(c)) == closingComm {
			h.closing = true
			h.who += " (closing it)"
		}
		out = append(out, h)
	}
	return out
}

// findPart returns partition spec.Part of the image in f.
func findPart(f *os.File, size int64, spec Spec, notef func(string, ...any)) (*block.Partition, error) {
	t, err := block.ReadTable(f, size, 512, block.TableOptions{ForceGPT: true})
	if errors.Is(err, block.ErrNoTable) {
		return nil, fmt.Errorf("%s: no partition table", spec.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading the partition table: %w", spec.Path, err)
	}
	if t.Backup {
		notef("%s: the primary GPT is damaged; using the backup", spec.Path)
	}
	if n, err := strconv.Atoi(spec.Part); err == nil {
		p := t.Part(n)
		if p == nil {
			return nil, fmt.Errorf("%s: no partition %d (iovfs parts %s lists them)", spec.Path, n, spec.Path)
		}
		if p.Extended {
			return nil, fmt.Errorf("%s: partition %d is an extended partition, which holds other partitions", spec.Path, n)
		}
		return p, nil
	}
	ps := t.ByName(spec.Part)
	switch len(ps) {
	case 0:
		return nil, fmt.Errorf("%s: no partition named %q (iovfs parts %s lists them)", spec.Path, spec.Part, spec.Path)
	case 1:
		return &ps[0], nil
	}
	return nil, fmt.Errorf("%s: %d partitions are named %q; name one by number", spec.Path, len(ps), spec.Part)
}

// detect reads the file system's magic at [start, start+size) of f:
// "ext4" (and whether its journal needs recovery) or "vfat".
func detect(f *os.File, start, size int64) (string, bool, error) {
	b := make([]byte, 2048)
	n, _ := f.ReadAt(b, start)
	b = b[:min(int64(n), size)]
	if len(b) >= 2048 && binary.LittleEndian.Uint16(b[1024+56:]) == 0xef53 {
		compat := binary.LittleEndian.Uint32(b[1024+0x5c:])
		incompat := binary.LittleEndian.Uint32(b[1024+0x60:])
		return "ext4", compat&0x4 != 0 && incompat&0x4 != 0, nil
	}
	if len(b) >= 512 && b[510] == 0x55 && b[511] == 0xaa {
		bps := binary.LittleEndian.Uint16(b[11:])
		media := b[21]
		if bps >= 512 && bps <= 4096 && bps&(bps-1) == 0 && b[13] != 0 && b[16] != 0 && (media >= 0xf8 || media == 0xf0) {
			return "vfat", false, nil
		}
	}
	return "", false, errors.New("no ext2/3/4 or FAT file system found")
}

// loop binds the image's range to a free loop device and returns its
// name; the mount holds it, and it clears when the mount goes.
func (im *Image) loop(write bool) (dev string, hold int, err error) {
	p := im.p
	fd, err := p.ImportFile(im.file)
	if err != nil {
		return "", -1, err
	}
	defer p.Close(fd)
	ctl, err := p.Open("/dev/loop-control", unix.O_RDWR, 0)
	if err != nil {
		return "", -1, err
	}
	n, err := p.Ioctl(ctl, unix.LOOP_CTL_GET_FREE, nil)
	p.Close(ctl)
	if err != nil {
		return "", -1, fmt.Errorf("no free loop device: %w", err)
	}
	dev = fmt.Sprintf("/dev/loop%d", n)
	mode := unix.O_RDONLY
	if write {
		mode = unix.O_RDWR
	}
	lfd, err := p.Open(dev, mode, 0)
	if err != nil {
		return "", -1, err
	}
	defer p.Close(lfd)
	cfg := unix.LoopConfig{Fd: uint32(fd)}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	if !write {
		cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
	}
	cfg.Info.Offset, cfg.Info.Sizelimit = uint64(im.Start), uint64(im.Size)
	copy(cfg.Info.File_name[:unix.LO_NAME_SIZE-1], im.Spec.Path)
	if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		return "", -1, fmt.Errorf("%s: binding a loop device: %w", im.Spec, err)
	}
	// Hold the device open until the mount has it (an autoclear device
	// clears at its last close).
	hold, err = p.Open(dev, mode, 0)
	if err != nil {
		return "", -1, err
	}
	return dev, hold, nil
}

// mount mounts dev at target: ext4 read-only with dax where the device
// offers it, read-write without; an ext image whose journal needs
// recovery, read-only, through an in-memory overlay.
func (im *Image) mount(dev, target string, o Options, recover bool) error {
	p := im.p
	var flags uintptr
	if !o.Write {
		flags = unix.MS_RDONLY
	}
	if im.FSType == "vfat" {
		return p.Mount(dev, target, "vfat", flags, "")
	}
	if o.Write {
		return p.Mount(dev, target, "ext4", 0, "")
	}
	// The driver's own log lines (recovery, warnings) would repeat what
	// Notef says once.
	logOut := log.Writer()
	log.SetOutput(io.Discard)
	defer log.SetOutput(logOut)
	if recover && o.DevFS != nil {
		ov, err := overlayOf(p, dev, o.DevFS)
		if err != nil {
			return err
		}
		if err := p.Mount(ov, target, "ext4", unix.MS_RDONLY, ""); err != nil {
			return err
		}
		im.Replayed = true
		o.Notef("%s: the journal needs recovery: showing the committed state, replayed in memory (the image is unchanged)", im.Spec)
		return nil
	}
	if err := p.Mount(dev, target, "ext4", unix.MS_RDONLY, "dax"); err == nil {
		return nil
	}
	err := p.Mount(dev, target, "ext4", unix.MS_RDONLY, "")
	if errors.Is(err, unix.EROFS) {
		o.Notef("%s: the journal needs recovery: showing the last checkpointed state", im.Spec)
		err = p.Mount(dev, target, "ext4", unix.MS_RDONLY, "noload")
	}
	return err
}

var overlayCount atomic.Int64

// overlayNode is an overlay as a device node.
type overlayNode struct {
	*block.Overlay
	minor uint32
}

func (o overlayNode) DevInfo() (uint32, uint64) {
	return unix.S_IFBLK | 0o600, vfs.Mkdev(240, o.minor) // a local/experimental major
}

func (o overlayNode) Open(int, vfs.Cred) (vfs.Handle, error) {
	return block.NewFile(o.Overlay, nil), nil
}

var (
	_ devfs.Device   = (*overlayNode)(nil)
	_ vfs.Opener     = (*overlayNode)(nil)
	_ vfs.IterReader = (*overlayNode)(nil)
	_ vfs.IterWriter = (*overlayNode)(nil)
)

// overlayOf makes an in-memory overlay of the loop device dev as a new
// device node and returns its path.
func overlayOf(p *vfs.Proc, dev string, dfs *devfs.FS) (string, error) {
	fd, err := p.Open(dev, unix.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	b, err := p.Backing(fd)
	p.Close(fd)
	if err != nil {
		return "", err
	}
	d, ok := block.Of(b.Handle())
	if !ok {
		b.Release()
		return "", syscall.ENOTBLK
	}
	n := overlayCount.Add(1)
	name := fmt.Sprintf("snapshot%d", n)
	// The backing stays held for the life of the process: the overlay
	// reads through it.
	if err := dfs.Add(name, overlayNode{block.NewOverlay(d), uint32(n)}); err != nil {
		b.Release()
		return "", err
	}
	return "/dev/" + name, nil
}

func mkdirAll(p *vfs.Proc, dir string) error {
	cur := ""
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		cur += "/" + part
		if err := p.Mkdir(cur, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	return nil
}
