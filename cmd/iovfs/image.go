package main

// The image tools: ls, cat, stat, tree, cp, parts and the editing
// commands, straight on an image file (ext2/3/4 or FAT, whole or one
// partition), without root, FUSE or host loop devices. package diskimage
// attaches the image (an iovfs loop device over the imported file, the
// file system mounted, the image lock taken) and resolves its paths
// inside it.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"syscall"

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
	if err := checkImageFile(diskimage.ParseSpec(spec).Path); err != nil {
		return nil, err
	}
	// The driver's own notices about a journal that needs recovery say
	// what Notef says once, in the image's terms; the others (a volume
	// mounted with errors) are printed.
	sink.begin()
	im, err := diskimage.Attach(p, diskimage.ParseSpec(spec), diskimage.Options{
		Write:  write,
		Target: target,
		DevFS:  devfsOf[p],
		Notef:  notef,
	})
	sink.endExcept(err == nil, "recover", "noload", "write access")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Op == "open" {
			return nil, &shownError{pe.Path + ": " + errText(pe.Err), err}
		}
		return nil, &shownError{loopDevName.ReplaceAllString(err.Error(), spec), err}
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
		// A command walks a tree once: a dentry cache of the library's
		// default size (a 1 MiB table) would cost the process more in
		// page faults than its hits save.
		p.Namespace().SetDentryCacheSize(cliDentries)
	}
	return p, err
}

// cliDentries is the size of an image command's dentry cache.
const cliDentries = 1 << 14

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

// notef prints a note about an image as a warning of the command
// running, once per message.
var noted = map[string]bool{}

// noteCLI is the command whose warnings notef prints: the dispatcher sets
// it.
var noteCLI = &cli{name: "", stdout: os.Stdout, stderr: os.Stderr}

func notef(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if noted[msg] {
		return
	}
	noted[msg] = true
	noteCLI.warnf("%s", msg)
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

// imageTools describes each image tool: its operands, its options (short
// letters, and long names mapped to them) and its help.
var imageTools = map[string]struct {
	operands  string // the synopsis' operands
	short     string
	long      map[string]string
	help      string
	needsPath bool // the operand must name a path (cat)
}{
	"ls": {operands: "IMAGE[@PART][:PATH]", short: "laAiR1dnh",
		long: map[string]string{"all": "a", "almost-all": "A", "inode": "i", "human-readable": "h", "recursive": "R", "directory": "d", "numeric-uid-gid": "n"},
		help: `usage: iovfs ls [-laAiR1dn] [--human-readable] IMAGE[@PART][:PATH]

Lists the directory PATH (default /) of the disk image IMAGE (ext2, ext3,
ext4 or FAT; IMAGE@N is its partition N, IMAGE@NAME a GPT partition by
name), as ls(1) lists a directory: without root, FUSE or a host loop
device. The image is only read. Names print as paths inside the image.

options:
  -l                     long listing: mode, links, owner, group, size, time
  -a, --all              include names that begin with '.'
  -A, --almost-all       as -a, without '.' and '..'
  -i, --inode            print inode numbers
  -R, --recursive        list subdirectories too
  -1                     one name per line
  -d, --directory        list PATH itself, not its contents
  -n, --numeric-uid-gid  as -l, with numeric owner and group
  --human-readable       sizes in K, M, G (also clustered, as in -lh)
  -h, --help             show this help ("-h" alone; clustered it is --human-readable)

examples:
  iovfs ls disk.img
  iovfs ls -l disk.img:/etc
  iovfs ls -lR --human-readable disk.img@2:/var/log
`},
	"cat": {operands: "IMAGE[@PART]:PATH", needsPath: true,
		help: `usage: iovfs cat IMAGE[@PART]:PATH

Prints the file PATH of the disk image IMAGE (ext2, ext3, ext4 or FAT;
IMAGE@N is its partition N) on standard output, as cat(1) does: without
root, FUSE or a host loop device. The image is only read.

options:
  -h, --help  show this help

examples:
  iovfs cat disk.img:/etc/os-release
  iovfs cat disk.img@1:/EFI/BOOT/grub.cfg
`},
	"stat": {operands: "IMAGE[@PART][:PATH]", short: "L", long: map[string]string{"dereference": "L"},
		help: `usage: iovfs stat [-L] IMAGE[@PART][:PATH]

Shows the status of PATH (default /) in the disk image IMAGE (ext2, ext3,
ext4 or FAT; IMAGE@N is its partition N) in GNU stat's format: type, size,
blocks, inode, links, mode, owner, times. The image is only read.

options:
  -L, --dereference  follow a symbolic link
  -h, --help         show this help

examples:
  iovfs stat disk.img:/bin/sh
  iovfs stat -L disk.img:/bin/sh
`},
	"tree": {operands: "IMAGE[@PART][:PATH]",
		help: `usage: iovfs tree IMAGE[@PART][:PATH]

Prints the tree under PATH (default /) of the disk image IMAGE (ext2,
ext3, ext4 or FAT; IMAGE@N is its partition N), as tree(1) does, with
symbolic link targets and a count of directories and files. The image is
only read.

options:
  -h, --help  show this help

examples:
  iovfs tree disk.img
  iovfs tree disk.img:/etc
`},
}

// parseImageArgs parses the arguments of the image tool name (ls, cat,
// stat, tree) into its options (short ones; long ones as their letter) and
// its operand, or says what is wrong with them; help reports -h or --help.
func parseImageArgs(name string, args []string) (flags []string, operand string, help bool, err error) {
	t := imageTools[name]
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case isHelp(a):
			return nil, "", true, nil
		case strings.HasPrefix(a, "--"):
			short, ok := t.long[strings.TrimPrefix(a, "--")]
			if !ok {
				return nil, "", false, fmt.Errorf("unknown option %s", a)
			}
			flags = append(flags, "-"+short)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, ch := range a[1:] {
				if !strings.ContainsRune(t.short, ch) {
					return nil, "", false, fmt.Errorf("invalid option -- '%c'", ch)
				}
			}
			flags = append(flags, a)
		default:
			operands = append(operands, a)
		}
	}
	switch {
	case len(operands) == 0:
		return nil, "", false, fmt.Errorf("missing %s operand", t.operands)
	case len(operands) > 1:
		return nil, "", false, fmt.Errorf("extra operand %q", operands[1])
	}
	return flags, operands[0], false, nil
}

// hasFlag reports whether the short option ch is among flags.
func hasFlag(flags []string, ch rune) bool {
	for _, f := range flags {
		if strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "--") && strings.ContainsRune(f[1:], ch) {
			return true
		}
	}
	return false
}

// runImageTool runs one of ls, cat, stat and tree on an image through
// the shell's builtins, whose behaviour and messages are coreutils'. The
// path is resolved inside the image (RESOLVE_IN_ROOT) before the builtin
// sees it.
func runImageTool(name string, args []string, stdout, stderr io.Writer) int {
	c := &cli{name: name, stdout: stdout, stderr: stderr}
	t := imageTools[name]
	flags, operand, help, err := parseImageArgs(name, args)
	if help {
		fmt.Fprint(stdout, t.help)
		return 0
	}
	if err != nil {
		return c.usageError("%v", err)
	}
	img, path := imageArg(operand)
	if t.needsPath && path == "/" && !strings.Contains(operand, ":") {
		if err := checkImageFile(diskimage.ParseSpec(img).Path); err != nil {
			return c.fail("%v", err) // a missing or wrong file: say that first
		}
		return c.usageError("%q names no file inside the image: want IMAGE:PATH, as %s:/etc/hostname", operand, img)
	}
	p, im, err := openImage(img)
	if err != nil {
		return c.fail("%v", err)
	}
	defer closeImages()
	// ls and tree list what a symlink to a directory points at, as
	// ls does without -l or -d; cat reads through links; stat does not
	// follow unless -L.
	follow := name == "cat" || name == "tree" || name == "stat" && hasFlag(flags, 'L')
	if name == "ls" {
		follow = !hasFlag(flags, 'l') && !hasFlag(flags, 'd') && !hasFlag(flags, 'n')
	}
	shown := img + ":" + path
	npath, err := im.Path(path, follow)
	if err == nil {
		_, err = p.Lstat(npath)
	}
	if err != nil {
		return c.fail("%s: %s", shown, errText(err))
	}
	switch name {
	case "tree":
		return printTree(p, im.Target, npath, path, img, stdout, c)
	case "cat":
		if st, err := p.Stat(npath); err == nil && st.IsDir() {
			return c.fail("%s: Is a directory", shown)
		}
	}
	if name != "stat" {
		return runBuiltinOn(p, im.Target, name, flags, npath, img, stdout, c)
	}
	// stat names the file as the user gave it, as GNU stat does; the
	// builtin saw its path inside the image.
	var out bytes.Buffer
	st := runBuiltinOn(p, im.Target, name, flags, npath, img, &out, c)
	rel := strings.TrimPrefix(strings.TrimPrefix(npath, im.Target), "/")
	if rel == "" {
		rel = "."
	}
	first, rest, _ := strings.Cut(out.String(), "\n")
	if t, ok := strings.CutPrefix(first, "  File: "+rel); ok && (t == "" || strings.HasPrefix(t, " -> ")) {
		first = "  File: " + shown + t
	}
	io.WriteString(stdout, first+"\n"+rest)
	return st
}

// usageError reports a usage error as every iovfs command does: exit 2.
func usageError(stderr io.Writer, cmd, msg string) int {
	return (&cli{name: cmd, stderr: stderr}).usageError("%s", msg)
}

// errText is the message of err without the operation and path a
// *fs.PathError adds (the caller names the file as the user gave it),
// with a capital letter, as coreutils print strerror.
func errText(err error) string {
	var pe *fs.PathError
	for errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	msg := err.Error()
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

// checkImageFile refuses, in words, a host file that cannot be an image: a
// missing file, a directory, a character device, a FIFO or socket, an
// empty file. Regular files and block devices pass.
func checkImageFile(img string) error {
	st, err := os.Stat(img)
	if err != nil {
		return fmt.Errorf("%s: %s", img, errText(err))
	}
	switch m := st.Mode(); {
	case m.IsDir():
		return fmt.Errorf("%s: is a directory, not an image file", img)
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice == 0:
		return nil // a block device: a disk or partition
	case m&fs.ModeCharDevice != 0:
		return fmt.Errorf("%s: is a character device, not an image file", img)
	case m&fs.ModeNamedPipe != 0, m&fs.ModeSocket != 0:
		return fmt.Errorf("%s: is a FIFO or socket, not an image file", img)
	case st.Size() == 0:
		return fmt.Errorf("%s: empty file, not a disk image", img)
	}
	return nil
}

// loopDevName matches the loop devices of the process's namespace, which
// must never reach a message.
var loopDevName = regexp.MustCompile(`/dev/loop[0-9]+(p[0-9]+)?`)

// mountMsg says why a mount failed: the driver's words without the
// operation, the source or an errno the words already explain; a bare
// errno is capitalized, and EINVAL and ENODEV say what they mean for a
// mount.
func mountMsg(err error) string {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	msg = strings.TrimPrefix(msg, "ext4: ")
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch {
		case msg == errno.Error() && errno == unix.EINVAL:
			msg = "Invalid argument: a bad option, or not a file system of that type"
		case msg == errno.Error() && errno == unix.ENODEV:
			msg = "No such device: not a file system type iovfs knows"
		case msg == errno.Error():
			msg = errText(errno)
		case strings.HasSuffix(msg, ": "+errno.Error()):
			msg = strings.TrimSuffix(msg, ": "+errno.Error())
		}
	}
	return loopDevName.ReplaceAllString(msg, "the loop device")
}

// A shownError is an error whose message is written for the user (names
// as the user gave them), wrapping the error it explains.
type shownError struct {
	msg string
	err error
}

func (e *shownError) Error() string { return e.msg }
func (e *shownError) Unwrap() error { return e.err }

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
