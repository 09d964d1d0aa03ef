package main

// The editing commands a build script needs on IMAGE[@PART]:PATH:
// mkdir [-p], rm [-r] [-f], mv, ln [-s], chmod, chown and touch, with
// coreutils' rules and messages. Each attaches its images read-write
// (under the image lock) and unmounts them at the end, which commits.

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/diskimage"
	"github.com/iovfs/iovfs/vfs"
)

// editUsage is each editing command's help.
var editUsage = map[string]string{
	"mkdir": `usage: iovfs mkdir [-p] IMAGE[@PART]:DIR...

Creates directories in a disk image (ext2/3/4 or FAT; @N its partition N),
as mkdir(1) does. The image is written under its lock.

options:
  -p          make parents as needed; an existing directory is no error
  -h, --help  show this help

examples:
  iovfs mkdir disk.img:/opt
  iovfs mkdir -p disk.img@2:/var/lib/app/data
`,
	"rm": `usage: iovfs rm [-r] [-f] IMAGE[@PART]:PATH...

Removes files (with -r, directories and their contents) from a disk image,
as rm(1) does. The image is written under its lock.

options:
  -r, -R      remove directories and their contents
  -f          ignore missing files
  -h, --help  show this help

examples:
  iovfs rm disk.img:/etc/motd
  iovfs rm -rf disk.img:/var/cache/apt
`,
	"mv": `usage: iovfs mv IMAGE[@PART]:SRC... IMAGE[@PART]:DEST

Renames or moves files within one disk image, into DEST when it is a
directory, as mv(1) does. The image is written under its lock.

options:
  -h, --help  show this help

examples:
  iovfs mv disk.img:/etc/motd disk.img:/etc/motd.old
  iovfs mv disk.img:/a disk.img:/b disk.img:/dir
`,
	"ln": `usage: iovfs ln [-s] TARGET IMAGE[@PART]:LINK

Makes a hard link LINK to IMAGE:TARGET, or with -s a symbolic link holding
TARGET as given, in a disk image, as ln(1) does. The image is written
under its lock.

options:
  -s          make a symbolic link
  -h, --help  show this help

examples:
  iovfs ln -s /usr/bin/busybox disk.img:/bin/sh
  iovfs ln /etc/hosts disk.img:/etc/hosts.bak
`,
	"chmod": `usage: iovfs chmod MODE IMAGE[@PART]:PATH...

Sets the permission bits of files in a disk image to the octal MODE. The
image is written under its lock.

options:
  -h, --help  show this help

examples:
  iovfs chmod 755 disk.img:/usr/local/bin/tool
  iovfs chmod 0600 disk.img:/etc/shadow
`,
	"chown": `usage: iovfs chown UID[:GID] IMAGE[@PART]:PATH...

Sets the owner (and group) of files in a disk image, by number. The image
is written under its lock.

options:
  -h, --help  show this help

examples:
  iovfs chown 0:0 disk.img:/etc/passwd
  iovfs chown 1000 disk.img:/home/user
`,
	"touch": `usage: iovfs touch IMAGE[@PART]:PATH...

Sets the access and modification times of files in a disk image to now,
creating missing ones empty, as touch(1) does. The image is written under
its lock.

options:
  -h, --help  show this help

examples:
  iovfs touch disk.img:/etc/.updated
`,
}

func editCommand(name string) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		return runEdit(name, args, stdout, stderr)
	}
}

type editor struct {
	name   string
	stderr io.Writer
	p      *vfs.Proc
	images map[string]*diskimage.Image
	status int
}

func (e *editor) fail(format string, a ...any) {
	fmt.Fprintf(e.stderr, "iovfs %s: "+format+"\n", append([]any{e.name}, a...)...)
	e.status = 1
}

// resolve returns the image and namespace path of an image operand.
func (e *editor) resolve(op string, follow bool) (*diskimage.Image, string, error) {
	spec, p, ok := splitImageOperand(op)
	if !ok {
		return nil, "", fmt.Errorf("not IMAGE[@PART]:PATH")
	}
	im := e.images[spec]
	np, err := im.Path(p, follow)
	return im, np, err
}

func runEdit(name string, args []string, stdout, stderr io.Writer) int {
	flags := map[rune]bool{}
	var operands []string
	allowed := map[string]string{"mkdir": "p", "rm": "rfR", "ln": "s"}[name]
	for i, a := range args {
		if a == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		if a == "-h" || a == "--help" {
			fmt.Fprint(stdout, editUsage[name])
			return 0
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 && !(name == "chmod" && len(operands) == 0 && isOctal(a[1:])) {
			for _, c := range a[1:] {
				if !strings.ContainsRune(allowed, c) {
					return usageError(stderr, name, fmt.Sprintf("invalid option -- '%c'", c))
				}
				flags[c] = true
			}
			continue
		}
		operands = append(operands, a)
	}
	min := map[string]int{"mkdir": 1, "rm": 1, "mv": 2, "ln": 2, "chmod": 2, "chown": 2, "touch": 1}[name]
	if len(operands) < min {
		return usageError(stderr, name, "missing operand")
	}
	if name == "ln" && len(operands) != 2 {
		return usageError(stderr, name, "expected TARGET and IMAGE[@PART]:LINK")
	}
	imageOps := operands
	switch name {
	case "chmod", "chown":
		imageOps = operands[1:]
	case "ln":
		if flags['s'] {
			imageOps = operands[1:]
		}
	}
	e := &editor{name: name, stderr: stderr, images: map[string]*diskimage.Image{}}
	for _, op := range imageOps {
		if _, _, ok := splitImageOperand(op); !ok {
			return usageError(stderr, name, fmt.Sprintf("'%s' is not IMAGE[@PART]:PATH with an existing image file", op))
		}
	}
	var err error
	if e.p, err = newProc(); err != nil {
		e.fail("%v", err)
		return 1
	}
	for _, op := range imageOps {
		spec, _, _ := splitImageOperand(op)
		if e.images[spec] != nil {
			continue
		}
		im, err := attachImage(e.p, spec, "", true)
		if err != nil {
			e.fail("%v", err)
			closeImages()
			return 1
		}
		e.images[spec] = im
	}
	switch name {
	case "mkdir":
		for _, op := range operands {
			e.mkdir(op, flags['p'])
		}
	case "rm":
		for _, op := range operands {
			e.rm(op, flags['r'] || flags['R'], flags['f'])
		}
	case "mv":
		e.mv(operands[:len(operands)-1], operands[len(operands)-1])
	case "ln":
		e.ln(operands[0], operands[1], flags['s'])
	case "chmod":
		m, err := strconv.ParseUint(operands[0], 8, 32)
		if err != nil || m > 0o7777 {
			closeImages()
			return usageError(stderr, name, fmt.Sprintf("invalid mode: '%s' (octal modes only)", operands[0]))
		}
		for _, op := range operands[1:] {
			if _, np, err := e.resolve(op, true); err != nil {
				e.fail("cannot access '%s': %s", op, errMsg(unwrapErrno(err)))
			} else if err := e.p.Chmod(np, uint32(m)); err != nil {
				e.fail("changing permissions of '%s': %s", op, errMsg(unwrapErrno(err)))
			}
		}
	case "chown":
		u, g, hasG := strings.Cut(operands[0], ":")
		uid, err1 := strconv.Atoi(u)
		gid := -1
		var err2 error
		if hasG && g != "" {
			gid, err2 = strconv.Atoi(g)
		}
		if err1 != nil || err2 != nil || uid < 0 {
			closeImages()
			return usageError(stderr, name, fmt.Sprintf("invalid owner: '%s' (numeric UID[:GID] only)", operands[0]))
		}
		for _, op := range operands[1:] {
			if _, np, err := e.resolve(op, true); err != nil {
				e.fail("cannot access '%s': %s", op, errMsg(unwrapErrno(err)))
			} else if err := e.p.Fchownat(unix.AT_FDCWD, np, uid, gid, 0); err != nil {
				e.fail("changing ownership of '%s': %s", op, errMsg(unwrapErrno(err)))
			}
		}
	case "touch":
		for _, op := range operands {
			e.touch(op)
		}
	}
	if err := closeImages(); err != nil {
		e.fail("%v", err)
	}
	return e.status
}

func isOctal(s string) bool {
	_, err := strconv.ParseUint(s, 8, 32)
	return err == nil
}

func (e *editor) mkdir(op string, parents bool) {
	spec, p, _ := splitImageOperand(op)
	im := e.images[spec]
	if !parents {
		np, err := im.Path(p, false)
		if err == nil {
			err = e.p.Mkdir(np, 0o777)
		}
		if err != nil {
			e.fail("cannot create directory '%s': %s", op, errMsg(unwrapErrno(err)))
		}
		return
	}
	cur := ""
	for _, c := range strings.Split(strings.Trim(p, "/"), "/") {
		if c == "" {
			continue
		}
		cur += "/" + c
		if np, err := im.Path(cur, true); err == nil {
			if st, err := e.p.Stat(np); err == nil && st.IsDir() {
				continue
			}
		}
		np, err := im.Path(cur, false)
		if err == nil {
			err = e.p.Mkdir(np, 0o777)
		}
		if err != nil && !errors.Is(err, syscall.EEXIST) {
			e.fail("cannot create directory '%s': %s", spec+":"+cur, errMsg(unwrapErrno(err)))
			return
		}
	}
}

func (e *editor) rm(op string, recursive, force bool) {
	_, np, err := e.resolve(op, false)
	var st vfs.Stat
	if err == nil {
		st, err = e.p.Lstat(np)
	}
	if err != nil {
		if !(force && errors.Is(err, syscall.ENOENT)) {
			e.fail("cannot remove '%s': %s", op, errMsg(unwrapErrno(err)))
		}
		return
	}
	if st.IsDir() && !recursive {
		e.fail("cannot remove '%s': Is a directory", op)
		return
	}
	if _, p, _ := splitImageOperand(op); strings.Trim(p, "/.") == "" {
		e.fail("refusing to remove '.' or '..' or the root: skipping '%s'", op)
		return
	}
	e.removeAll(np, op)
}

func (e *editor) removeAll(np, display string) {
	st, err := e.p.Lstat(np)
	if err != nil {
		e.fail("cannot remove '%s': %s", display, errMsg(unwrapErrno(err)))
		return
	}
	if !st.IsDir() {
		if err := e.p.Unlink(np); err != nil {
			e.fail("cannot remove '%s': %s", display, errMsg(unwrapErrno(err)))
		}
		return
	}
	ents, err := listDir(e.p, np)
	if err != nil {
		e.fail("cannot remove '%s': %s", display, errMsg(unwrapErrno(err)))
		return
	}
	for _, d := range ents {
		e.removeAll(np+"/"+d.Name, display+"/"+d.Name)
	}
	if err := e.p.Rmdir(np); err != nil {
		e.fail("cannot remove '%s': %s", display, errMsg(unwrapErrno(err)))
	}
}

func (e *editor) mv(srcs []string, dest string) {
	dspec, _, _ := splitImageOperand(dest)
	dim, dnp, derr := e.resolve(dest, true)
	destDir := false
	if derr == nil {
		if st, err := e.p.Stat(dnp); err == nil && st.IsDir() {
			destDir = true
		}
	}
	if len(srcs) > 1 && !destDir {
		e.fail("target '%s' is not a directory", dest)
		return
	}
	for _, s := range srcs {
		sspec, _, _ := splitImageOperand(s)
		sim, snp, err := e.resolve(s, false)
		if err != nil {
			e.fail("cannot stat '%s': %s", s, errMsg(unwrapErrno(err)))
			continue
		}
		if sim != dim || sspec != dspec {
			e.fail("cannot move '%s' to '%s': moves between images are not supported (use iovfs cp and iovfs rm)", s, dest)
			continue
		}
		target := ""
		if destDir {
			target = strings.TrimSuffix(dnp, "/") + "/" + path.Base(snp)
		} else {
			if target, err = dim.Path(pathOf(dest), false); err != nil {
				e.fail("cannot move '%s' to '%s': %s", s, dest, errMsg(unwrapErrno(err)))
				continue
			}
		}
		if err := e.p.Rename(snp, target); err != nil {
			e.fail("cannot move '%s' to '%s': %s", s, dest, errMsg(unwrapErrno(err)))
		}
	}
}

func pathOf(op string) string {
	_, p, _ := splitImageOperand(op)
	return p
}

func (e *editor) ln(target, link string, symbolic bool) {
	lim, lnp, err := e.resolve(link, false)
	if err == nil {
		if st, serr := e.p.Stat(lnp); serr == nil && st.IsDir() {
			base := path.Base(target)
			if !symbolic {
				base = path.Base(pathOf(target))
			}
			lnp = strings.TrimSuffix(lnp, "/") + "/" + base
		}
	}
	if err != nil {
		e.fail("failed to create %slink '%s': %s", map[bool]string{true: "symbolic ", false: "hard "}[symbolic], link, errMsg(unwrapErrno(err)))
		return
	}
	if symbolic {
		if err := e.p.Symlink(target, lnp); err != nil {
			e.fail("failed to create symbolic link '%s': %s", link, errMsg(unwrapErrno(err)))
		}
		return
	}
	tim, tnp, err := e.resolve(target, false)
	if err != nil {
		e.fail("failed to access '%s': %s", target, errMsg(unwrapErrno(err)))
		return
	}
	if tim != lim {
		e.fail("failed to create hard link '%s' => '%s': Invalid cross-device link", link, target)
		return
	}
	if err := e.p.Link(tnp, lnp); err != nil {
		e.fail("failed to create hard link '%s' => '%s': %s", link, target, errMsg(unwrapErrno(err)))
	}
}

func (e *editor) touch(op string) {
	_, np, err := e.resolve(op, true)
	if errors.Is(err, syscall.ENOENT) {
		_, np, err = e.resolve(op, false)
	}
	if err != nil {
		e.fail("cannot touch '%s': %s", op, errMsg(unwrapErrno(err)))
		return
	}
	fd, err := e.p.Open(np, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, 0o666)
	if err != nil {
		if !errors.Is(err, syscall.EISDIR) {
			e.fail("cannot touch '%s': %s", op, errMsg(unwrapErrno(err)))
			return
		}
	} else {
		e.p.Close(fd)
	}
	now := time.Now()
	if err := e.p.Utimes(np, now, now); err != nil {
		e.fail("setting times of '%s': %s", op, errMsg(unwrapErrno(err)))
	}
}
