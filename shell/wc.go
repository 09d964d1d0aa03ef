package shell

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

func init() {
	register(&builtin{name: "wc", summary: "count lines, words and bytes (-l -w -c)", run: runWc,
		options: []option{
			{short: 'l', long: "lines", help: "print the newline counts"},
			{short: 'w', long: "words", help: "print the word counts"},
			{short: 'c', long: "bytes", help: "print the byte counts"},
			{short: 'm', long: "chars", key: "c", help: "print the character counts (bytes: the C locale)"},
		}})
}

func runWc(c *cmd, f flags, ops []string) int {
	show := [3]bool{f.has("l"), f.has("w"), f.has("c")}
	if !show[0] && !show[1] && !show[2] {
		show = [3]bool{true, true, true}
	}
	nshow := 0
	for _, s := range show {
		if s {
			nshow++
		}
	}
	stdin := len(ops) == 0
	if stdin {
		ops = []string{"-"}
	}
	type res struct {
		name string
		n    [3]int64
		ok   bool
	}
	var rs []res
	var total [3]int64
	status := 0
	width := 1
	var sizes int64
	for _, op := range ops {
		if op == "-" {
			width = 7
		} else if st, err := c.p.Stat(op); err == nil {
			if st.IsRegular() {
				sizes += st.Size
			} else {
				width = 7
			}
		}
	}
	width = max(width, len(strconv.FormatInt(sizes, 10)))
	if nshow == 1 && len(ops) == 1 {
		width = 1
	}
	for _, op := range ops {
		r, done, err := c.openIn(op)
		if err != nil {
			c.errorf("%s: %s", quotef(op), errText(err))
			status = 1
			continue
		}
		var n [3]int64
		inWord := false
		buf := make([]byte, 64<<10)
		var rerr error
		for !c.stopped() {
			k, err := r.Read(buf)
			b := buf[:k]
			n[2] += int64(k)
			if show[1] {
				for _, c := range b {
					if c == '\n' {
						n[0]++
					}
					space := c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
					if !space && !inWord {
						n[1]++
					}
					inWord = !space
				}
			} else if show[0] {
				n[0] += int64(bytes.Count(b, []byte{'\n'}))
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				rerr = err
				break
			}
		}
		done()
		if rerr != nil {
			c.errorf("%s: %s", quotef(op), errText(rerr))
			status = 1
		}
		name := op
		if stdin {
			name = ""
		}
		rs = append(rs, res{name, n, true})
		for i := range total {
			total[i] += n[i]
		}
	}
	if c.ctx.Err() != nil {
		return 130
	}
	if len(ops) > 1 {
		rs = append(rs, res{"total", total, true})
	}
	for _, r := range rs {
		var fields []string
		for i, s := range show {
			if s {
				fields = append(fields, fmt.Sprintf("%*d", width, r.n[i]))
			}
		}
		line := strings.Join(fields, " ")
		if r.name != "" {
			line += " " + r.name
		}
		fmt.Fprintln(c.out, line)
	}
	return status
}
