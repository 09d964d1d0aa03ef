package main

// The image tools: ls, cat, stat, cp and tree straight from an ext2/3/4
// image file, without root, FUSE or host loop devices. The image comes in
// through ImportFile, an iovfs loop device (LOOP_CTL_GET_FREE, read-only,
// AUTOCLEAR) and the ext4 driver mounted read-only with dax, which copies
// file data straight from the mapped image.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	_ "github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/vfs"
)

// attachImage imports the host file img, binds it to a free loop device
// and mounts it read-only at target with opts (dax where the device
// offers direct access, unless opts says otherwise). The mount holds the device; unmounting clears it.
func attachImage(p *vfs.Proc, img, target, opts string) error {
	f, err := os.Open(img)
	if err != nil {
		return err
	}
	fd, err := p.ImportFile(f)
	f.Close()
	if err != nil {
		return err
	}
	defer p.Close(fd)
	ctl, err := p.Open("/dev/loop-control", unix.O_RDWR, 0)
	if err != nil {
		return err
	}
	n, err := p.Ioctl(ctl, unix.LOOP_CTL_GET_FREE, nil)
	p.Close(ctl)
	if err != nil {
		return fmt.Errorf("no free loop device: %w", err)
	}
	dev := fmt.Sprintf("/dev/loop%d", n)
	lfd, err := p.Open(dev, unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer p.Close(lfd)
	cfg := unix.LoopConfig{Fd: uint32(fd)}
	cfg.Info.Flags = unix.LO_FLAGS_READ_ONLY | unix.LO_FLAGS_AUTOCLEAR
	copy(cfg.Info.File_name[:], img)
	if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		return fmt.Errorf("LOOP_CONFIGURE %s: %w", dev, err)
	}
	if _, err := p.Stat(target); err != nil {
		if err := mkdirAll(p, target); err != nil {
			return err
		}
	}
	if opts != "" {
		return mountReadOnly(p, dev, target, opts)
	}
	// dax when the loop device can map the file; a file too small for a
	// mapping (or one that cannot be mapped) is mounted without it, so
	// the error, if any, is the file system's own.
	if err := mountReadOnly(p, dev, target, "dax"); err == nil {
		return nil
	}
	return mountReadOnly(p, dev, target, "")
}

// mountReadOnly mounts the read-only loop device dev at target. An image
// whose journal needs recovery cannot be replayed through a read-only
// device (EROFS, as Linux's "write access unavailable"), and the image
// tools never write the image: it is mounted with noload instead, showing
// the last checkpointed state, as before the replay existed.
func mountReadOnly(p *vfs.Proc, dev, target, opts string) error {
	err := p.Mount(dev, target, "ext4", unix.MS_RDONLY, opts)
	if errors.Is(err, unix.EROFS) {
		if opts != "" {
			opts += ","
		}
		err = p.Mount(dev, target, "ext4", unix.MS_RDONLY, opts+"noload")
	}
	return err
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

// imageArg splits IMAGE[:PATH]. An argument naming an existing host file
// is an image with path "/" even if it contains ':'.
func imageArg(arg string) (img, path string) {
	if _, err := os.Stat(arg); err == nil {
		return arg, "/"
	}
	if i := strings.LastIndexByte(arg, ':'); i > 0 {
		path = arg[i+1:]
		if path == "" {
			path = "/"
		}
		return arg[:i], path
	}
	return arg, "/"
}

// imageMount is where the image tools mount the image in their namespace.
const imageMount = "/mnt/img"

// openImage returns a process with img mounted at imageMount, and the
// namespace path for path inside it.
func openImage(img, path string) (*vfs.Proc, string, error) {
	p, err := iovfs.New()
	if err != nil {
		return nil, "", err
	}
	if err := attachImage(p, img, imageMount, ""); err != nil {
		return nil, "", err
	}
	// Owners print with the host's names, as the host's ls and stat
	// would print them: the builtins read /etc/passwd and /etc/group
	// from the namespace.
	copyHostFile(p, "/etc/passwd")
	copyHostFile(p, "/etc/group")
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return p, strings.TrimSuffix(imageMount+path, "/"), nil
}

// runImageTool runs one of ls, cat, stat, tree and cp on an image through
// the shell's builtins, whose behaviour and messages are coreutils'.
func runImageTool(name string, args []string, stdout, stderr io.Writer) int {
	var flags, operands []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
		} else {
			operands = append(operands, a)
		}
	}
	want := 1
	if name == "cp" {
		want = 2
	}
	if len(operands) != want {
		fmt.Fprintf(stderr, "usage: iovfs %s %s\n", name, imageUsage[name])
		return 2
	}
	img, path := imageArg(operands[0])
	if name == "cat" || name == "stat" {
		if path == "/" && !strings.Contains(operands[0], ":") && name == "cat" {
			fmt.Fprintf(stderr, "usage: iovfs %s %s\n", name, imageUsage[name])
			return 2
		}
	}
	p, npath, err := openImage(img, path)
	if err != nil {
		fmt.Fprintf(stderr, "iovfs %s: %s: %v\n", name, img, err)
		return 1
	}
	defer p.Unmount(imageMount, unix.MNT_DETACH)
	if name == "cp" {
		return extract(p, npath, operands[1], flags, stderr)
	}
	if name == "tree" {
		return printTree(p, npath, path, stdout, stderr)
	}
	return runBuiltinOn(p, name, flags, npath, path, stdout, stderr)
}

var imageUsage = map[string]string{
	"ls":   "[-l -R -a -i -h -d] IMAGE[:PATH]",
	"cat":  "IMAGE:PATH",
	"stat": "IMAGE[:PATH]",
	"tree": "IMAGE[:PATH]",
	"cp":   "[-r -a] IMAGE:PATH HOSTDEST",
}

// copyHostFile copies a small host file into the namespace at the same
// path, if the host has it.
func copyHostFile(p *vfs.Proc, name string) {
	b, err := os.ReadFile(name)
	if err != nil {
		return
	}
	if mkdirAll(p, path.Dir(name)) != nil {
		return
	}
	f, err := p.OpenFile(name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
	if err != nil {
		return
	}
	f.Write(b)
	f.Close()
}
