package main

// Overlays for iovfs mount, run and sh: the layers live in a namespace of
// their own (host directories through hostfs, images through a loop
// device), apart from the namespace the overlay is shown in, so that no
// internal mount point shows there and every message names what the user
// gave.

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/iovfs/iovfs/diskimage"
	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// layerSet builds an overlay's layers in a process of their own.
type layerSet struct {
	p      *vfs.Proc
	n      int  // directories made under /layers
	host   bool // the host's / is mounted at /host
	lowers []int
	upper  int
	work   int
}

func newLayerSet() (*layerSet, error) {
	p, err := newProc()
	if err != nil {
		return nil, err
	}
	if err := p.Mkdir("/layers", 0o755); err != nil {
		return nil, err
	}
	return &layerSet{p: p, upper: -1, work: -1}, nil
}

// dir makes a new directory for a layer's mount.
func (s *layerSet) dir() (string, error) {
	d := fmt.Sprintf("/layers/%d", s.n)
	s.n++
	return d, s.p.Mkdir(d, 0o755)
}

// hostPath returns where the host path path is in the layers' namespace:
// the host's / comes in once, through hostfs, crossing host mounts.
func (s *layerSet) hostPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if !s.host {
		if err := s.p.Mkdir("/host", 0o755); err != nil {
			return "", err
		}
		if err := s.p.Mount("/", "/host", "hostfs", 0, "xdev"); err != nil {
			return "", err
		}
		s.host = true
	}
	return "/host" + abs, nil
}

// openDir opens dir of the layers' namespace for the overlay, with an
// error that names what the user gave.
func (s *layerSet) openDir(dir, what, given string) (int, error) {
	fd, err := s.p.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, &shownError{fmt.Sprintf("%s %s: %s", what, given, errText(err)), err}
	}
	return fd, nil
}

// addLowerHost adds the host directory, or the image (IMAGE[@PART]),
// path as the next lower layer (read-only, an image through a loop
// device).
func (s *layerSet) addLowerHost(path string) error {
	fi, err := os.Stat(path)
	if err == nil && fi.Mode().IsRegular() {
		return s.addLowerImage(path)
	}
	if spec := diskimage.ParseSpec(path); err != nil && spec.Part != "" {
		if _, err := os.Stat(spec.Path); err == nil {
			return s.addLowerImage(path) // a partition of an image
		}
	}
	if err != nil {
		return &shownError{fmt.Sprintf("lowerdir %s: %s", path, errText(err)), err}
	}
	dir, err := s.hostPath(path)
	if err != nil {
		return err
	}
	fd, err := s.openDir(dir, "lowerdir", path)
	if err != nil {
		return err
	}
	s.lowers = append(s.lowers, fd)
	return nil
}

// addLowerImage adds the file system of an image (IMAGE[@PART], ext2/3/4
// or FAT) as the next lower layer, read-only.
func (s *layerSet) addLowerImage(spec string) error {
	dir, err := s.dir()
	if err != nil {
		return err
	}
	im, err := attachImage(s.p, spec, dir, false) // image.go; its errors name spec
	if err != nil {
		return err
	}
	s.p.Close(im.Root())
	fd, err := s.openDir(dir, "lowerdir", spec)
	if err != nil {
		return err
	}
	s.lowers = append(s.lowers, fd)
	return nil
}

// setUpperHost makes the host directories upper and work the upper layer
// and its work directory, which must be on one host file system.
func (s *layerSet) setUpperHost(upper, work string) error {
	var ust, wst unix.Stat_t
	if err := unix.Stat(upper, &ust); err != nil {
		return &shownError{fmt.Sprintf("upperdir %s: %s", upper, errText(err)), err}
	}
	if err := unix.Stat(work, &wst); err != nil {
		return &shownError{fmt.Sprintf("workdir %s: %s", work, errText(err)), err}
	}
	if ust.Dev != wst.Dev {
		return fmt.Errorf("upperdir %s and workdir %s are on different file systems: %w", upper, work, unix.EINVAL)
	}
	u, err := s.hostPath(upper)
	if err != nil {
		return err
	}
	w, err := s.hostPath(work)
	if err != nil {
		return err
	}
	if s.upper, err = s.openDir(u, "upperdir", upper); err != nil {
		return err
	}
	s.work, err = s.openDir(w, "workdir", work)
	return err
}

// setUpperKept makes HOSTDIR/upper and HOSTDIR/work (made if missing) the
// upper layer and its work directory: the layout that
// "mount -t overlay -o lowerdir=...,upperdir=HOSTDIR/upper,workdir=HOSTDIR/work"
// mounts.
func (s *layerSet) setUpperKept(hostdir string) error {
	for _, d := range []string{"upper", "work"} {
		if err := os.MkdirAll(filepath.Join(hostdir, d), 0o755); err != nil {
			return &shownError{fmt.Sprintf("--overlay-dir %s: %s", hostdir, errText(err)), err}
		}
	}
	dir, err := s.dir()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(hostdir)
	if err != nil {
		return err
	}
	if err := s.p.Mount(abs, dir, "hostfs", 0, ""); err != nil {
		return &shownError{fmt.Sprintf("--overlay-dir %s: %s", hostdir, mountMsg(err)), err}
	}
	if s.upper, err = s.openDir(dir+"/upper", "--overlay-dir", hostdir); err != nil {
		return err
	}
	s.work, err = s.openDir(dir+"/work", "--overlay-dir", hostdir)
	return err
}

// setUpperMemory makes a new tmpfs the upper layer: the changes live in
// memory and go with the process.
func (s *layerSet) setUpperMemory() error {
	dir, err := s.dir()
	if err != nil {
		return err
	}
	if err := s.p.Mount("tmpfs", dir, "tmpfs", 0, "mode=755"); err != nil {
		return err
	}
	for _, d := range []string{"upper", "work"} {
		if err := s.p.Mkdir(dir+"/"+d, 0o755); err != nil {
			return err
		}
	}
	if s.upper, err = s.openDir(dir+"/upper", "upper layer", "(memory)"); err != nil {
		return err
	}
	s.work, err = s.openDir(dir+"/work", "work directory", "(memory)")
	return err
}

// build makes the overlay; the layer set's descriptors are closed.
func (s *layerSet) build(userxattr bool) (*overlay.FS, error) {
	defer func() {
		for _, fd := range append(s.lowers, s.upper, s.work) {
			if fd >= 0 {
				s.p.Close(fd)
			}
		}
	}()
	return overlay.Open(s.p, overlay.Dirs{Lower: s.lowers, Upper: s.upper, Work: s.work, UserXattr: userxattr})
}

// hostOverlay is "-t overlay -o OPTIONS" of iovfs mount: OPTIONS are
// overlayfs's, with host directories (lowerdir may name an image file).
func hostOverlay(data string) (*overlay.FS, error) {
	o, err := overlay.ParseOptions(data)
	if err != nil {
		return nil, err
	}
	s, err := newLayerSet()
	if err != nil {
		return nil, err
	}
	for _, l := range o.Lower {
		if err := s.addLowerHost(l); err != nil {
			return nil, err
		}
	}
	if o.Upper != "" && o.Work != "" {
		if err := s.setUpperHost(o.Upper, o.Work); err != nil {
			return nil, err
		}
	} else if o.Upper != "" || o.Work != "" {
		return nil, fmt.Errorf("upperdir and workdir go together: %w", unix.EINVAL)
	}
	return s.build(o.UserXattr)
}

// overlayMount is an overlay mounted over an image in a process's
// namespace (iovfs sh --overlay).
type overlayMount struct {
	fs     *overlay.FS
	target string
}

// imageOverlay attaches the image spec (IMAGE[@PART]) read-only in a
// namespace of its own and makes an overlay over it whose upper layer is
// in memory, or kept in hostdir.
func imageOverlay(spec, hostdir string) (*overlay.FS, error) {
	s, err := newLayerSet()
	if err != nil {
		return nil, err
	}
	if err := s.addLowerImage(spec); err != nil {
		return nil, err
	}
	if hostdir != "" {
		err = s.setUpperKept(hostdir)
	} else {
		err = s.setUpperMemory()
	}
	if err != nil {
		return nil, err
	}
	return s.build(false)
}

// overlayImage mounts at target of p's namespace an imageOverlay.
func overlayImage(p *vfs.Proc, spec, target, hostdir string) (*overlayMount, error) {
	fs, err := imageOverlay(spec, hostdir)
	if err != nil {
		return nil, err
	}
	if _, err := p.Stat(target); err != nil {
		if err := mkdirAll(p, target); err != nil {
			fs.Shutdown()
			return nil, err
		}
	}
	if err := p.Namespace().MountFS(target, fs, false); err != nil {
		fs.Shutdown()
		return nil, err
	}
	return &overlayMount{fs, target}, nil
}

// close unmounts the overlay and lets its image go, whatever still holds
// a file of it: the process is ending.
func (o *overlayMount) close(p *vfs.Proc) {
	p.Unmount(o.target, unix.MNT_DETACH)
	o.fs.Shutdown()
}
