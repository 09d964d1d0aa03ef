package shell

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "stat", summary: "display file status (GNU's format; -L -c --printf)", minOps: 1, run: runStat,
		options: []option{
			{short: 'L', long: "dereference", help: "follow symbolic links"},
			{short: 'c', long: "format", arg: needArg, help: "use the specified FORMAT instead of the default; output a newline after each use of FORMAT"},
			{long: "printf", arg: needArg, help: "like --format, but interpret backslash escapes, and do not output a mandatory trailing newline"},
		}})
}

func runStat(c *cmd, f flags, ops []string) int {
	status := 0
	for _, op := range ops {
		var st vfs.Stat
		var err error
		if f.has("L") {
			st, err = c.p.Stat(op)
		} else {
			st, err = c.p.Lstat(op)
		}
		if err != nil {
			c.errorf("cannot statx %s: %s", quote(op), errText(err))
			status = 1
			continue
		}
		switch f.lastOf("c", "printf") {
		case "c":
			fmt.Fprint(c.out, statFormat(c.p, f.value("c"), op, st)+"\n")
		case "printf":
			fmt.Fprint(c.out, statFormat(c.p, statEscapes(f.value("printf")), op, st))
		default:
			fmt.Fprint(c.out, statText(c.p, op, st))
		}
	}
	return status
}

// statText is GNU stat's default output (Birth is "-" where the file
// system keeps no creation time).
func statText(p *vfs.Proc, name string, st vfs.Stat) string {
	var b strings.Builder
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		t, _ := p.Readlink(name)
		fmt.Fprintf(&b, "  File: %s -> %s\n", name, t)
	} else {
		fmt.Fprintf(&b, "  File: %s\n", name)
	}
	fmt.Fprintf(&b, "  Size: %-10d\tBlocks: %-10d IO Block: %-6d %s\n", st.Size, st.Blocks, st.Blksize, fileType(st))
	dev := fmt.Sprintf("%d,%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	if t := st.Mode & unix.S_IFMT; t == unix.S_IFCHR || t == unix.S_IFBLK {
		fmt.Fprintf(&b, "Device: %s\tInode: %-11d Links: %-5d Device type: %d,%d\n", dev, st.Ino, st.Nlink, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	} else {
		fmt.Fprintf(&b, "Device: %s\tInode: %-11d Links: %d\n", dev, st.Ino, st.Nlink)
	}
	fmt.Fprintf(&b, "Access: (%04o/%s)  Uid: (%5d/%8s)   Gid: (%5d/%8s)\n", st.Mode&0o7777, modeString(st.Mode),
		st.Uid, statName(p, "/etc/passwd", st.Uid), st.Gid, statName(p, "/etc/group", st.Gid))
	tf := "2006-01-02 15:04:05.000000000 -0700"
	birth := "-"
	if !st.Btime.IsZero() {
		birth = st.Btime.Local().Format(tf)
	}
	fmt.Fprintf(&b, "Access: %s\nModify: %s\nChange: %s\n Birth: %s\n", st.Atime.Local().Format(tf), st.Mtime.Local().Format(tf), st.Ctime.Local().Format(tf), birth)
	return b.String()
}

// statFormat expands GNU stat's FORMAT directives for the file name
// with status st: each % directive may carry printf's flags, width and
// precision ("%-8s", "%08a").
func statFormat(p *vfs.Proc, format, name string, st vfs.Stat) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-#0 +'", format[j]) >= 0 {
			j++
		}
		for j < len(format) && (format[j] >= '0' && format[j] <= '9' || format[j] == '.') {
			j++
		}
		if j == len(format) {
			b.WriteString(format[i:])
			break
		}
		spec := strings.ReplaceAll(format[i:j], "'", "")
		conv := format[j]
		i = j
		num := func(v uint64) { b.WriteString(fmt.Sprintf(strings.TrimSuffix(spec, ".")+"d", v)) }
		str := func(v string) { b.WriteString(fmt.Sprintf(spec+"s", v)) }
		// epoch is %X %Y %Z: seconds, and with a precision that many
		// digits of the fraction, truncated.
		epoch := func(t time.Time) {
			w, prec, hasPrec := strings.Cut(spec, ".")
			if !hasPrec {
				b.WriteString(fmt.Sprintf(w+"d", t.Unix()))
				return
			}
			n := 9 // "%.Y": all nine digits
			if prec != "" {
				n, _ = strconv.Atoi(prec)
			}
			v := strconv.FormatInt(t.Unix(), 10)
			if n > 0 {
				frac := fmt.Sprintf("%09d", t.Nanosecond())
				v += "." + (frac + strings.Repeat("0", max(n-9, 0)))[:n]
			}
			b.WriteString(fmt.Sprintf(w+"s", v))
		}
		ts := func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05.000000000 -0700") }
		switch conv {
		case '%':
			b.WriteByte('%')
		case 'a':
			b.WriteString(fmt.Sprintf(strings.TrimSuffix(spec, ".")+"o", st.Mode&0o7777))
		case 'A':
			str(modeString(st.Mode))
		case 'b':
			num(uint64(st.Blocks))
		case 'B':
			num(512)
		case 'd':
			num(st.Dev)
		case 'D':
			b.WriteString(fmt.Sprintf(strings.TrimSuffix(spec, ".")+"x", st.Dev))
		case 'f':
			b.WriteString(fmt.Sprintf(strings.TrimSuffix(spec, ".")+"x", st.Mode))
		case 'F':
			str(fileType(st))
		case 'g':
			num(uint64(st.Gid))
		case 'G':
			str(statName(p, "/etc/group", st.Gid))
		case 'h':
			num(uint64(st.Nlink))
		case 'i':
			num(st.Ino)
		case 'n':
			str(name)
		case 'N':
			q := quote(name)
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				t, _ := p.Readlink(name)
				q += " -> " + quote(t)
			}
			str(q)
		case 'o':
			num(uint64(st.Blksize))
		case 's':
			num(uint64(st.Size))
		case 't':
			b.WriteString(fmt.Sprintf(strings.TrimSuffix(spec, ".")+"x", unix.Major(st.Rdev)))
		case 'T':
			b.WriteString(fmt.Sprintf(strings.TrimSuffix(spec, ".")+"x", unix.Minor(st.Rdev)))
		case 'u':
			num(uint64(st.Uid))
		case 'U':
			str(statName(p, "/etc/passwd", st.Uid))
		case 'w':
			if st.Btime.IsZero() {
				str("-")
			} else {
				str(ts(st.Btime))
			}
		case 'W':
			if st.Btime.IsZero() {
				num(0)
			} else {
				epoch(st.Btime)
			}
		case 'x':
			str(ts(st.Atime))
		case 'X':
			epoch(st.Atime)
		case 'y':
			str(ts(st.Mtime))
		case 'Y':
			epoch(st.Mtime)
		case 'z':
			str(ts(st.Ctime))
		case 'Z':
			epoch(st.Ctime)
		default:
			b.WriteByte('?') // as GNU's stat prints an unknown directive
		}
	}
	return b.String()
}

// statEscapes interprets --printf's backslash escapes: \n \t \\ \"
// \a \b \f \r \v, octal \NNN and hex \xHH.
func statEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; {
		case c >= '0' && c <= '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(v))
			i = j - 1
		case c == 'x' && i+1 < len(s) && isHex(s[i+1]):
			j := i + 1
			for j < len(s) && j < i+3 && isHex(s[j]) {
				j++
			}
			v, _ := strconv.ParseUint(s[i+1:j], 16, 8)
			b.WriteByte(byte(v))
			i = j - 1
		default:
			if e, ok := map[byte]byte{'a': 7, 'b': 8, 'f': 12, 'n': 10, 'r': 13, 't': 9, 'v': 11, '\\': '\\', '"': '"'}[c]; ok {
				b.WriteByte(e)
			} else {
				b.WriteByte('\\')
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
