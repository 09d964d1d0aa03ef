package shell

import (
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "ls", summary: "list directory contents (-l -a -A -i -h -R -1 -d -n)", run: runLs, usageStatus: 2,
		options: []option{
			{short: 'l', help: "long listing"},
			{short: 'a', long: "all", help: "include names starting with ."},
			{short: 'A', long: "almost-all", help: "as -a, without . and .."},
			{short: 'i', long: "inode", help: "print each file's inode number"},
			{short: 'h', long: "human-readable", help: "with -l, sizes as 1K 234M 2G"},
			{short: 'R', long: "recursive", help: "list subdirectories recursively"},
			{short: '1', help: "one name per line"},
			{short: 'd', long: "directory", help: "list directories themselves, not their contents"},
			{short: 'n', long: "numeric-uid-gid", help: "as -l, with numeric user and group ids"},
		}})
}

type lsOpts struct {
	long, all, almost, inode, human, recursive, dirs bool
	numeric                                          bool // -n: ids as numbers
	one                                              bool // -1
	now                                              time.Time
}

type lsEntry struct {
	name, path string
	st         vfs.Stat
	target     string
}

func runLs(c *cmd, f flags, ops []string) int {
	o := lsOpts{long: f.has("l") || f.has("n"), numeric: f.has("n"), one: f.has("1"), all: f.has("a"), almost: f.has("A"),
		inode: f.has("i"), human: f.has("h"), recursive: f.has("R"),
		dirs: f.has("d"), now: time.Now()}
	if len(ops) == 0 {
		ops = []string{"."}
	}
	status := 0
	var files []lsEntry
	var dirs []lsEntry
	for _, op := range ops {
		st, err := c.p.Stat(op)
		if err != nil || o.long || o.dirs {
			// ls -l and -d describe a symlink operand itself.
			if lst, lerr := c.p.Lstat(op); lerr == nil && (err != nil || o.dirs || o.long && !st.IsDir()) {
				st, err = lst, nil
			}
		}
		if err != nil {
			c.errorf("cannot access %s: %s", quote(op), errText(err))
			status = 2
			continue
		}
		e := lsEntry{name: op, path: op, st: st}
		if st.IsDir() && !o.dirs {
			dirs = append(dirs, e)
		} else {
			e.target = c.linkTarget(op, st)
			files = append(files, e)
		}
	}
	sortEntries(files)
	sortEntries(dirs)
	c.lsPrint(o, files, false, dirs)
	header := len(ops) > 1 || o.recursive
	for i, d := range dirs {
		if len(files) > 0 || i > 0 {
			fmt.Fprintln(c.out)
		}
		if st := c.lsDir(o, d.path, header); st > status {
			status = st
		}
		if c.stopped() {
			break
		}
	}
	return status
}

func (c *cmd) linkTarget(p string, st vfs.Stat) string {
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		return ""
	}
	t, _ := c.p.Readlink(p)
	return t
}

func sortEntries(es []lsEntry) {
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
}

// lsDir lists one directory, and with -R those below it, each after a
// blank line.
func (c *cmd) lsDir(o lsOpts, dir string, header bool) int {
	if header {
		fmt.Fprintf(c.out, "%s:\n", dir)
	}
	ents, err := readDirents(c.p, dir)
	if err != nil {
		c.errorf("cannot open directory %s: %s", quote(dir), errText(err))
		return 2
	}
	var list []lsEntry
	if o.all {
		for _, n := range []string{".", ".."} {
			st, err := c.p.Lstat(path.Join(dir, n))
			if err == nil {
				list = append(list, lsEntry{name: n, path: path.Join(dir, n), st: st})
			}
		}
	}
	status := 0
	for _, d := range ents {
		if strings.HasPrefix(d.Name, ".") && !o.all && !o.almost {
			continue
		}
		// GNU names what it lists under dir as dir + "/" + name,
		// uncleaned: "ls -R" prints "./d:".
		p := dir + "/" + d.Name
		if strings.HasSuffix(dir, "/") {
			p = dir + d.Name
		}
		st, err := c.p.Lstat(p)
		if err != nil {
			c.errorf("cannot access %s: %s", quote(p), errText(err))
			status = 1
			continue
		}
		list = append(list, lsEntry{name: d.Name, path: p, st: st, target: c.linkTarget(p, st)})
	}
	sortEntries(list)
	c.lsPrint(o, list, true, nil)
	if o.recursive {
		for _, e := range list {
			if e.st.IsDir() && e.name != "." && e.name != ".." {
				fmt.Fprintln(c.out)
				if st := c.lsDir(o, e.path, true); st > status {
					status = st
				}
			}
			if c.stopped() {
				break
			}
		}
	}
	return status
}

// lsPrint prints entries one per line, or in ls -l's aligned columns
// (with "total" first when listing a directory).
//
// GNU ls sizes the columns of the command line's files over every
// operand, the directories listed after them included: extra are those.
func (c *cmd) lsPrint(o lsOpts, es []lsEntry, total bool, extra []lsEntry) {
	if !o.long {
		names := make([]string, len(es))
		for i, e := range es {
			names[i] = e.name
			if o.inode {
				names[i] = fmt.Sprintf("%d %s", e.st.Ino, e.name)
			}
		}
		if width := c.termWidth(); width > 0 && !o.one {
			printColumns(c.out, names, width)
			return
		}
		for _, n := range names {
			fmt.Fprintln(c.out, n)
		}
		return
	}
	var blocks int64
	rows := make([][]string, len(es))
	var w [7]int
	for i, e := range append(es[:len(es):len(es)], extra...) {
		blocks += e.st.Blocks
		size := strconv.FormatInt(e.st.Size, 10)
		if o.human {
			size = human(e.st.Size)
		}
		if t := e.st.Mode & unix.S_IFMT; t == unix.S_IFCHR || t == unix.S_IFBLK {
			size = fmt.Sprintf("%d, %d", unix.Major(e.st.Rdev), unix.Minor(e.st.Rdev))
		}
		owner, group := strconv.FormatUint(uint64(e.st.Uid), 10), strconv.FormatUint(uint64(e.st.Gid), 10)
		if !o.numeric {
			owner, group = userName(c.p, e.st.Uid), groupName(c.p, e.st.Gid)
		}
		r := []string{strconv.FormatUint(e.st.Ino, 10), modeString(e.st.Mode),
			strconv.FormatUint(e.st.Nlink, 10), owner, group, size, lsTime(e.st.Mtime, o.now)}
		for j, f := range r {
			w[j] = max(w[j], len(f))
		}
		if i < len(es) {
			rows[i] = r
		} else {
			continue
		}
	}
	if total {
		t := strconv.FormatInt((blocks+1)/2, 10)
		if o.human {
			t = human(blocks * 512)
		}
		fmt.Fprintf(c.out, "total %s\n", t)
	}
	for i, e := range es {
		r := rows[i]
		var b strings.Builder
		if o.inode {
			fmt.Fprintf(&b, "%*s ", w[0], r[0])
		}
		fmt.Fprintf(&b, "%s %*s %-*s %-*s %*s %s %s", r[1], w[2], r[2], w[3], r[3], w[4], r[4], w[5], r[5], r[6], e.name)
		if e.target != "" {
			b.WriteString(" -> " + e.target)
		}
		fmt.Fprintln(c.out, b.String())
	}
}

// lsTime is ls's default time style: month, day and time for times in
// the last six months (and not in the future), month, day and year
// otherwise.
func lsTime(t, now time.Time) string {
	t = t.Local()
	if t.After(now.Add(-183*24*time.Hour)) && !t.After(now) {
		return t.Format("Jan _2 15:04")
	}
	return t.Format("Jan _2  2006")
}

// termWidth is the width of the terminal standard output is, or 0 when it
// is not one (then ls prints one name per line, as GNU's does).
func (c *cmd) termWidth() int {
	f, ok := c.rawOut.(*os.File)
	if !ok || !isTerminal(f) {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 80
	}
	return int(ws.Col)
}

// printColumns prints names down columns, as many as fit in width with
// two spaces between them (GNU ls -C).
func printColumns(w io.Writer, names []string, width int) {
	if len(names) == 0 {
		return
	}
	for cols := len(names); cols >= 1; cols-- {
		rows := (len(names) + cols - 1) / cols
		widths := make([]int, cols)
		total := 0
		for i, n := range names {
			col := i / rows
			widths[col] = max(widths[col], len(n))
		}
		for i, cw := range widths {
			total += cw
			if i < cols-1 {
				total += 2
			}
		}
		if total > width && cols > 1 {
			continue
		}
		var b strings.Builder
		for r := 0; r < rows; r++ {
			b.Reset()
			for col := 0; col < cols; col++ {
				i := col*rows + r
				if i >= len(names) {
					break
				}
				b.WriteString(names[i])
				if next := (col+1)*rows + r; next < len(names) {
					b.WriteString(strings.Repeat(" ", widths[col]-len(names[i])+2))
				}
			}
			fmt.Fprintln(w, b.String())
		}
		return
	}
}
