package shell

import (
	"bufio"
	"strconv"
	"strings"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// idName maps a uid or gid to its name from the namespace's /etc/passwd
// or /etc/group (field 1 and 3 of each line), as getpwuid(3) would read
// them; without an entry, id 0 is "root" and others print as numbers.
func idName(p *vfs.Proc, file string, id uint32) string {
	if n, ok := idLookup(p, file, id); ok {
		return n
	}
	if id == 0 {
		return "root"
	}
	return strconv.FormatUint(uint64(id), 10)
}

// idLookup finds id's name in the namespace's file (field 1 of the line
// whose field 3 is id); id 0 is "root" without an entry.
func idLookup(p *vfs.Proc, file string, id uint32) (string, bool) {
	if f, err := p.OpenFile(file, unix.O_RDONLY, 0); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Split(sc.Text(), ":")
			if len(fs) > 2 && fs[2] == strconv.FormatUint(uint64(id), 10) {
				return fs[0], true
			}
		}
	}
	return "root", id == 0
}

// statName is stat's %U and %G: the name, or UNKNOWN, as GNU stat prints
// an id without one.
func statName(p *vfs.Proc, file string, id uint32) string {
	if n, ok := idLookup(p, file, id); ok {
		return n
	}
	return "UNKNOWN"
}

func userName(p *vfs.Proc, uid uint32) string  { return idName(p, "/etc/passwd", uid) }
func groupName(p *vfs.Proc, gid uint32) string { return idName(p, "/etc/group", gid) }

// modeString is ls -l's and stat's ten-character mode: the type letter
// and rwx triplets with s, S, t and T for the special bits.
func modeString(m uint32) string {
	b := []byte("?rwxrwxrwx")
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		b[0] = '-'
	case unix.S_IFDIR:
		b[0] = 'd'
	case unix.S_IFLNK:
		b[0] = 'l'
	case unix.S_IFCHR:
		b[0] = 'c'
	case unix.S_IFBLK:
		b[0] = 'b'
	case unix.S_IFIFO:
		b[0] = 'p'
	case unix.S_IFSOCK:
		b[0] = 's'
	}
	for i := 0; i < 9; i++ {
		if m&(1<<(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	special := func(bit uint32, pos int, set, unset byte) {
		if m&bit != 0 {
			if b[pos] == '-' {
				b[pos] = unset
			} else {
				b[pos] = set
			}
		}
	}
	special(unix.S_ISUID, 3, 's', 'S')
	special(unix.S_ISGID, 6, 's', 'S')
	special(unix.S_ISVTX, 9, 't', 'T')
	return string(b)
}

// human is GNU's human-readable size (ls -h, du -h, df -h): powers of
// 1024 with one letter, rounded up, one decimal below 10.
func human(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10)
	}
	units := "KMGTPE"
	v := float64(n)
	u := -1
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v < 10 {
		t := ceil1(v)
		if t >= 10 {
			return strconv.FormatFloat(t, 'f', 0, 64) + units[u:u+1]
		}
		return strconv.FormatFloat(t, 'f', 1, 64) + units[u:u+1]
	}
	c := int64(v)
	if float64(c) < v {
		c++
	}
	if c >= 1024 && u < len(units)-1 {
		return "1.0" + units[u+1:u+2]
	}
	return strconv.FormatInt(c, 10) + units[u:u+1]
}

// ceil1 rounds v up to one decimal.
func ceil1(v float64) float64 {
	t := float64(int64(v * 10))
	if t < v*10 {
		t++
	}
	return t / 10
}

// fileType is stat's %F.
func fileType(st vfs.Stat) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Size == 0 {
			return "regular empty file"
		}
		return "regular file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFCHR:
		return "character special file"
	case unix.S_IFBLK:
		return "block special file"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "weird file"
}
