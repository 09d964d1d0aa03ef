package shell

import (
	"fmt"
	"strconv"
	"strings"
)

func init() {
	register(&builtin{name: "du", summary: "estimate file space usage (-s -h)", run: runDu,
		options: []option{
			{short: 's', long: "summarize", help: "a total for each operand only"},
			{short: 'h', long: "human-readable", help: "sizes as 1K 234M 2G"},
			{short: 'a', long: "all", help: "files too, not only directories"},
			{short: 'k', help: "1K blocks (the default)"},
		}})
}

func runDu(c *cmd, f flags, ops []string) int {
	if len(ops) == 0 {
		ops = []string{"."}
	}
	seen := map[[2]uint64]bool{}
	status := 0
	show := func(blocks int64, p string) {
		kb := (blocks*512 + 1023) / 1024
		s := strconv.FormatInt(kb, 10)
		if f.has("h") {
			s = human(kb * 1024)
			if kb == 0 {
				s = "0"
			}
		}
		fmt.Fprintf(c.out, "%s\t%s\n", s, p)
	}
	var walk func(p string, depth int) int64
	walk = func(p string, depth int) int64 {
		st, err := c.p.Lstat(p)
		if err != nil {
			c.errorf("cannot access %s: %s", quote(p), errText(err))
			status = 1
			return 0
		}
		key := [2]uint64{st.Dev, st.Ino}
		if st.Nlink > 1 && !st.IsDir() {
			if seen[key] {
				return 0
			}
			seen[key] = true
		}
		total := st.Blocks
		if st.IsDir() {
			ents, err := readDirents(c.p, p)
			if err != nil {
				c.errorf("cannot read directory %s: %s", quote(p), errText(err))
				status = 1
			}
			for _, d := range ents {
				total += walk(strings.TrimSuffix(p, "/")+"/"+d.Name, depth+1)
			}
			if !f.has("s") || depth == 0 {
				show(total, p)
			}
		} else if depth == 0 || f.has("a") && !f.has("s") {
			show(total, p)
		}
		return total
	}
	for _, op := range ops {
		walk(op, 0)
	}
	return status
}
