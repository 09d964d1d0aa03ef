package shell

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/iovfs/iovfs/vfs"
)

func init() {
	register(&builtin{name: "df", summary: "report file system space usage, from statfs (-h)", run: runDf,
		options: []option{
			{short: 'h', long: "human-readable", help: "sizes in powers of 1024 (1K 234M 2G)"},
			{short: 'k', help: "1K blocks (the default)"},
			{short: 'a', long: "all", help: "include file systems of no blocks"},
		}})
}

// mountOf returns the mount that holds path: the one with the longest
// target that is a prefix of its canonical form.
func (c *cmd) mountOf(mounts []vfs.MountInfo, path string) (vfs.MountInfo, bool) {
	canon, err := c.canonicalize(path)
	if err != nil {
		return vfs.MountInfo{}, false
	}
	best, found := vfs.MountInfo{}, false
	for _, m := range mounts {
		if canon == m.Target || m.Target == "/" || strings.HasPrefix(canon, m.Target+"/") {
			if !found || len(m.Target) >= len(best.Target) {
				best, found = m, true
			}
		}
	}
	return best, found
}

func runDf(c *cmd, f flags, ops []string) int {
	mounts := c.p.Namespace().Mounts()
	var list []vfs.MountInfo
	status := 0
	if len(ops) == 0 {
		list = mounts
	}
	for _, op := range ops {
		if _, err := c.p.Stat(op); err != nil {
			c.errorf("%s: %s", op, errText(err))
			status = 1
			continue
		}
		if m, ok := c.mountOf(mounts, op); ok {
			list = append(list, m)
		}
	}
	rows := [][]string{{"Filesystem", "1K-blocks", "Used", "Available", "Use%", "Mounted on"}}
	if f.has("h") {
		rows[0] = []string{"Filesystem", "Size", "Used", "Avail", "Use%", "Mounted on"}
	}
	for _, m := range list {
		st, err := c.p.Statfs(m.Target)
		if err != nil {
			c.errorf("%s: %s", m.Target, errText(err))
			status = 1
			continue
		}
		// GNU df leaves out file systems of zero blocks unless -a.
		if st.Blocks == 0 && !f.has("a") && len(ops) == 0 {
			continue
		}
		bs := int64(st.Frsize)
		if bs == 0 {
			bs = st.Bsize
		}
		size, free, avail := int64(st.Blocks)*bs, int64(st.Bfree)*bs, int64(st.Bavail)*bs
		used := size - free
		pct := "-"
		if used+avail > 0 {
			p := (used*100 + used + avail - 1) / (used + avail)
			pct = strconv.FormatInt(p, 10) + "%"
		}
		fig := func(n int64) string {
			if f.has("h") {
				return dfHuman(n)
			}
			return strconv.FormatInt((n+1023)/1024, 10)
		}
		rows = append(rows, []string{m.Source, fig(size), fig(used), fig(avail), pct, m.Target})
	}
	if len(rows) == 1 && len(ops) > 0 {
		return status // nothing to show: GNU prints no header either
	}
	// GNU's minimum widths: 14 for the source, 5 for the figures, 4
	// for Use%.
	w := [6]int{14, 5, 5, 5, 4, 0}
	for _, r := range rows {
		for i, f := range r {
			w[i] = max(w[i], len(f))
		}
	}
	for _, r := range rows {
		fmt.Fprintf(c.out, "%-*s %*s %*s %*s %*s %s\n", w[0], r[0], w[1], r[1], w[2], r[2], w[3], r[3], w[4], r[4], r[5])
	}
	return status
}

// dfHuman is df -h's figure: like ls -h, with "0" for zero.
func dfHuman(n int64) string {
	if n == 0 {
		return "0"
	}
	return human(n)
}
