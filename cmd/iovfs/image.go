package main

// The image tools: ls, cat, stat, tree, cp, parts and the editing
// commands, straight on an image file (ext2/3/4 or FAT, whole or one
// partition), without root, FUSE or host loop devices. package diskimage
// attaches the image (an iovfs loop device over the imported file, the
// file system mounted, the image lock taken) and resolves its paths
// inside it.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/diskimage"
	"github.com/iovfs/iovfs/fs/devfs"
	"github.com/iovfs/iovfs/vfs"
)

// attachImage attaches the image spec (IMAGE[@PART], see diskimage) at
// target in p, read-only unless write, under the image lock; it stays
// attached until closeImages. Notes (a journal replayed in memory) go to
// stderr once.
func attachImage(p *vfs.Proc, spec, target string, write bool) (*diskimage.Image, error) {
	im, err := diskimage.Attach(p, diskimage.ParseSpec(spec), diskimage.Options{
		Write:  write,
		Target: target,
		DevFS:  devfsOf[p],
		Notef:  notef,
	})
	if err != nil {
		return nil, err
	}
	attached = append(attached, im)
	return im, nil
}

// attached are the images this command has attached; closeImages
// unmounts them, committing what was written.
var attached []*diskimage.Image

// devfsOf maps a process made by newProc to its /dev.
var devfsOf = map[*vfs.Proc]*devfs.FS{}

// newProc returns a process as iovfs.New does, remembering its /dev.
func newProc() (*vfs.Proc, error) {
	var dev *devfs.FS
	p, err := iovfs.New(iovfs.WithDevFS(&dev))
	if err == nil {
		devfsOf[p] = dev
	}
	return p, err
}

func closeImages() error {
	var first error
	for i := len(attached) - 1; i >= 0; i-- {
		if err := attached[i].Close(); err != nil && first == nil {
			first = fmt.Errorf("%s: %w", attached[i].Spec, err)
		}
	}
	attached = nil
	return first
}

// notef prints a note about an image to stderr, once per message.
var noted = map[string]bool{}

var noteOut io.Writer = os.Stderr

func notef(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if noted[msg] {
		return
	}
	noted[msg] = true
	fmt.Fprintf(noteOut, "iovfs: %s\n", msg)
}

// mountReadOnly mounts the read-only loop device dev at target. An image
// whose journal needs recovery cannot be replayed through a read-only
// device (EROFS): it is mounted with noload instead, showing the last
// checkpointed state.
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

// imageArg splits IMAGE[@PART][:PATH]. An argument naming an existing
// host file is an image with path "/" even if it contains ':'.
func imageArg(arg string) (img, path string) {
	if _, err := os.Stat(arg); err == nil {
		return arg, "/"
	}
	if spec, p, ok := splitImageOperand(arg); ok {
		return spec, p
	}
	return arg, "/"
}

// splitImageOperand splits IMAGE[@PART]:PATH where IMAGE is an existing
// host file; ok is false for an operand that names no image.
func splitImageOperand(arg string) (spec, path string, ok bool) {
	for i := 0; i < len(arg); i++ {
		if arg[i] != ':' {
			continue
		}
		cand := arg[:i]
		sp := diskimage.ParseSpec(cand)
		if fi, err := os.Stat(sp.Path); err == nil && !fi.IsDir() {
			path = arg[i+1:]
			if path == "" {
				path = "/"
			}
			return cand, path, true
		}
	}
	return "", "", false
}

// openImage returns a process with the image attached read-only, and
// the image.
func openImage(spec string) (*vfs.Proc, *diskimage.Image, error) {
	p, err := newProc()
	if err != nil {
		return nil, nil, err
	}
	im, err := attachImage(p, spec, "", false)
	if err != nil {
		return nil, nil, err
	}
	// Owners print with the host's names, as the host's ls and stat
	// would print them: the builtins read /etc/passwd and /etc/group
	// from the namespace.
	copyHostFile(p, "/etc/passwd")
	copyHostFile(p, "/etc/group")
	return p, im, nil
}

// runImageTool runs one of ls, cat, stat and tree on an image through
// the shell's builtins, whose behaviour and messages are coreutils'. The
// path is resolved inside the image (RESOLVE_IN_ROOT) before the builtin
// sees it.
func runImageTool(name string, args []string, stdout, stderr io.Writer) int {
	var flags, operands []string
	for _, a := range args {
		if a == "-h" && name != "ls" || a == "--help" {
			fmt.Fprintf(stdout, "usage: iovfs %s %s\n", name, imageUsage[name])
			return 0
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
		} else {
			operands = append(operands, a)
		}
	}
	if len(operands) != 1 {
		return usageError(stderr, name, "expected one operand IMAGE[@PART][:PATH]")
	}
	img, path := imageArg(operands[0])
	if name == "cat" && path == "/" && !strings.Contains(operands[0], ":") {
		return usageError(stderr, name, "expected IMAGE[@PART]:PATH")
	}
	p, im, err := openImage(img)
	if err != nil {
		fmt.Fprintf(stderr, "iovfs %s: %v\n", name, err)
		return 1
	}
	defer closeImages()
	// ls and tree list what a symlink to a directory points at, as
	// ls does without -l or -d; cat reads through links; stat does not
	// follow.
	follow := name == "cat" || name == "tree"
	if name == "ls" {
		follow = true
		for _, f := range flags {
			if strings.ContainsAny(f, "ld") && !strings.HasPrefix(f, "--") {
				follow = false
			}
		}
	}
	npath, err := im.Path(path, follow)
	if err != nil {
		fmt.Fprintf(stderr, "iovfs %s: %s: %v\n", name, operands[0], errText(err))
		return 1
	}
	if name == "tree" {
		return printTree(p, npath, path, stdout, stderr)
	}
	return runBuiltinOn(p, im.Target, name, flags, npath, path, stdout, stderr)
}

// usageError reports a usage error as every iovfs command does: exit 2.
func usageError(stderr io.Writer, cmd, msg string) int {
	fmt.Fprintf(stderr, "iovfs %s: %s\nTry 'iovfs %s --help'.\n", cmd, msg, cmd)
	return 2
}

// errText is an error's text without the path a *fs.PathError adds (the
// caller names what the user gave).
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

var imageUsage = map[string]string{
	"ls":   "[-l -R -a -i -h -d] IMAGE[@PART][:PATH]",
	"cat":  "IMAGE[@PART]:PATH",
	"stat": "IMAGE[@PART][:PATH]",
	"tree": "IMAGE[@PART][:PATH]",
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
