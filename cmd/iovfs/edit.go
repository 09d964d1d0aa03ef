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
	"touch": `usage: iovfs touch [-acm] [-d DATE | -r REF | -t STAMP] IMAGE[@PART]:PATH...

Sets the access and modification times of files in a disk image to now (or
to the time given), creating missing ones empty, as touch(1) does. The
image is written under its lock.

options:
  -a                   change only the access time
  -m                   change only the modification time
  -c, --no-create      do not create missing files
  -d, --date=DATE      use DATE: @SECONDS[.FRACTION] (seconds since the
                       epoch), YYYY-MM-DD, or YYYY-MM-DD[ T]hh:mm[:ss[.frac]]
                       with an optional Z or +hh:mm zone (local time
                       otherwise), or now
  -r, --reference=REF  use the times of REF, a host file or IMAGE[@PART]:PATH
  -t STAMP             use [[CC]YY]MMDDhhmm[.ss], local time
  -h, --help           show this help

examples:
  iovfs touch disk.img:/etc/.updated
  iovfs touch -d @$SOURCE_DATE_EPOCH disk.img:/etc/os-release
  iovfs touch -r /etc/hostname disk.img:/etc/hostname
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
	allowed := map[string]string{"mkdir": "p", "rm": "rfR", "ln": "s", "touch": "amc"}[name]
	var tf touchFlags
	if name == "touch" {
		var err error
		if args, err = tf.parse(args); err != nil {
			return usageError(stderr, name, err.Error())
		}
		// A bad DATE or STAMP is refused before any image is opened.
		if tf.ref == "" {
			if _, _, err := tf.times(nil); err != nil {
				fmt.Fprintf(stderr, "iovfs %s: %v\n", name, err)
				return 1
			}
		}
	}
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
		at, mt, err := tf.times(e)
		if err != nil {
			e.fail("%v", err)
			break
		}
		if flags['a'] || flags['m'] {
			if !flags['a'] {
				at = time.Time{}
			}
			if !flags['m'] {
				mt = time.Time{}
			}
		}
		for _, op := range operands {
			e.touch(op, at, mt, flags['c'])
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

// touch sets the times of op to at and mt (a zero time: left alone),
// creating it empty when it is missing, unless noCreate.
func (e *editor) touch(op string, at, mt time.Time, noCreate bool) {
	_, np, err := e.resolve(op, true)
	if errors.Is(err, syscall.ENOENT) {
		if noCreate {
			return
		}
		_, np, err = e.resolve(op, false)
	}
	if err != nil {
		e.fail("cannot touch '%s': %s", op, errMsg(unwrapErrno(err)))
		return
	}
	if !noCreate {
		fd, err := e.p.Open(np, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, 0o666)
		if err != nil {
			if !errors.Is(err, syscall.EISDIR) {
				e.fail("cannot touch '%s': %s", op, errMsg(unwrapErrno(err)))
				return
			}
		} else {
			e.p.Close(fd)
		}
	}
	if err := e.p.Utimes(np, at, mt); err != nil && !(noCreate && errors.Is(err, syscall.ENOENT)) {
		e.fail("setting times of '%s': %s", op, errMsg(unwrapErrno(err)))
	}
}

// touchFlags are touch's options that take a value.
type touchFlags struct {
	date, ref, stamp string
	set              int // how many of the three were given
}

// parse takes -d, -r and -t (and their long forms, and --no-create, which
// becomes -c) out of args and returns the rest.
func (f *touchFlags) parse(args []string) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		var dst *string
		var val string
		hasVal := false
		switch {
		case a == "--no-create":
			rest = append(rest, "-c")
			continue
		case a == "-d" || a == "--date":
			dst = &f.date
		case a == "-r" || a == "--reference":
			dst = &f.ref
		case a == "-t":
			dst = &f.stamp
		case strings.HasPrefix(a, "--date="):
			dst, val, hasVal = &f.date, a[len("--date="):], true
		case strings.HasPrefix(a, "--reference="):
			dst, val, hasVal = &f.ref, a[len("--reference="):], true
		case len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "drt"):
			// Clustered short options: -cd DATE, -mdDATE.
			k := strings.IndexAny(a, "drt")
			if k > 1 {
				rest = append(rest, a[:k])
			}
			dst = map[byte]*string{'d': &f.date, 'r': &f.ref, 't': &f.stamp}[a[k]]
			if k+1 < len(a) {
				val, hasVal = a[k+1:], true
			}
		default:
			rest = append(rest, a)
			continue
		}
		if !hasVal {
			if i+1 == len(args) {
				return nil, fmt.Errorf("option requires an argument -- '%s'", strings.TrimLeft(a, "-"))
			}
			i++
			val = args[i]
		}
		*dst = val
		f.set++
	}
	if f.set > 1 {
		return nil, fmt.Errorf("cannot specify times from more than one source")
	}
	return rest, nil
}

// times returns the access and modification times the options give:
// now when none does. e (nil unless REF was given) reads REF.
func (f *touchFlags) times(e *editor) (time.Time, time.Time, error) {
	switch {
	case f.date != "":
		t, err := parseTouchDate(f.date, time.Now())
		return t, t, err
	case f.stamp != "":
		t, err := parseTouchStamp(f.stamp, time.Now())
		return t, t, err
	case f.ref != "":
		var st vfs.Stat
		var err error
		if _, _, ok := splitImageOperand(f.ref); ok {
			var np string
			spec, _, _ := splitImageOperand(f.ref)
			if e.images[spec] == nil {
				im, aerr := attachImage(e.p, spec, "", false)
				if aerr != nil {
					return time.Time{}, time.Time{}, aerr
				}
				e.images[spec] = im
			}
			if _, np, err = e.resolve(f.ref, true); err == nil {
				st, err = e.p.Stat(np)
			}
		} else {
			var hst unix.Stat_t
			if err = unix.Stat(f.ref, &hst); err == nil {
				st.Atime = time.Unix(hst.Atim.Unix())
				st.Mtime = time.Unix(hst.Mtim.Unix())
			}
		}
		if err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("failed to get attributes of '%s': %s", f.ref, errMsg(unwrapErrno(err)))
		}
		return st.Atime, st.Mtime, nil
	}
	now := time.Now()
	return now, now, nil
}

// parseTouchDate parses touch -d's DATE: @SECONDS[.FRACTION], now,
// YYYY-MM-DD (midnight), or YYYY-MM-DD hh:mm[:ss[.frac]] (a T may stand
// for the space) with an optional zone: Z, UTC, +hh:mm, +hhmm. Without a
// zone the time is local.
func parseTouchDate(s string, now time.Time) (time.Time, error) {
	bad := fmt.Errorf("invalid date format '%s'", s)
	v := strings.TrimSpace(s)
	if v == "now" {
		return now, nil
	}
	if rest, ok := strings.CutPrefix(v, "@"); ok {
		sec, frac, _ := strings.Cut(rest, ".")
		n, err := strconv.ParseInt(sec, 10, 64)
		if err != nil || sec == "" || strings.HasPrefix(sec, "+") {
			return time.Time{}, bad
		}
		var ns int64
		if frac != "" {
			if len(frac) > 9 {
				frac = frac[:9]
			}
			f, err := strconv.ParseUint(frac, 10, 32)
			if err != nil {
				return time.Time{}, bad
			}
			ns = int64(f)
			for range 9 - len(frac) {
				ns *= 10
			}
			if n < 0 || strings.HasPrefix(sec, "-") {
				ns = -ns
			}
		}
		return time.Unix(n, ns), nil
	}
	loc := time.Local
	switch {
	case strings.HasSuffix(v, "Z"):
		v, loc = strings.TrimSuffix(v, "Z"), time.UTC
	case strings.HasSuffix(v, " UTC"):
		v, loc = strings.TrimSuffix(v, " UTC"), time.UTC
	}
	v = strings.Replace(v, "T", " ", 1)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999 -07:00", "2006-01-02 15:04:05.999999999-0700", "2006-01-02 15:04:05.999999999 -0700", "2006-01-02 15:04-07:00", "2006-01-02 15:04 -07:00"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, bad
}

// parseTouchStamp parses touch -t's [[CC]YY]MMDDhhmm[.ss] in local time;
// a two-digit year is 1969..2068, as POSIX says.
func parseTouchStamp(s string, now time.Time) (time.Time, error) {
	bad := fmt.Errorf("invalid date format '%s'", s)
	main, sec, hasSec := strings.Cut(s, ".")
	digits := func(x string) bool {
		for _, c := range x {
			if c < '0' || c > '9' {
				return false
			}
		}
		return x != ""
	}
	if !digits(main) || hasSec && (len(sec) != 2 || !digits(sec)) {
		return time.Time{}, bad
	}
	year := now.Year()
	switch len(main) {
	case 8:
	case 10:
		yy, _ := strconv.Atoi(main[:2])
		year = 1900 + yy
		if yy < 69 {
			year = 2000 + yy
		}
		main = main[2:]
	case 12:
		year, _ = strconv.Atoi(main[:4])
		main = main[4:]
	default:
		return time.Time{}, bad
	}
	num := func(i int) int { n, _ := strconv.Atoi(main[i : i+2]); return n }
	mon, day, hh, mm := num(0), num(2), num(4), num(6)
	ss := 0
	if hasSec {
		ss, _ = strconv.Atoi(sec)
	}
	t := time.Date(year, time.Month(mon), day, hh, mm, ss, 0, time.Local)
	// time.Date normalises out-of-range fields; touch refuses them
	// (a second of 60 is a leap second and allowed).
	if mon < 1 || mon > 12 || t.Day() != day && ss != 60 || hh > 23 || mm > 59 || ss > 60 {
		return time.Time{}, bad
	}
	return t, nil
}
