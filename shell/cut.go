package shell

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

func init() {
	register(&builtin{name: "cut", summary: "remove sections from each line of files (-b -c -f -d -s)", run: runCut,
		options: []option{
			{short: 'b', long: "bytes", arg: needArg, help: "select only these bytes"},
			{short: 'c', long: "characters", arg: needArg, help: "select only these characters"},
			{short: 'd', long: "delimiter", arg: needArg, help: "use DELIM instead of TAB for field delimiter"},
			{short: 'f', long: "fields", arg: needArg, help: "select only these fields; also print any line that contains no delimiter character, unless -s"},
			{short: 'n', help: "(ignored)"},
			{long: "complement", help: "complement the set of selected bytes, characters or fields"},
			{short: 's', long: "only-delimited", help: "do not print lines not containing delimiters"},
			{long: "output-delimiter", arg: needArg, help: "use STRING as the output delimiter"},
			{short: 'z', long: "zero-terminated", help: "line delimiter is NUL, not newline"},
		}})
}

// cutRange is one item of a LIST, 1-based and inclusive.
type cutRange struct{ lo, hi int }

// parseCutList reads a LIST ("N", "N-", "N-M", "-M", separated by commas
// or blanks) with GNU cut's messages; fields says which words to use.
func parseCutList(s string, fields bool) ([]cutRange, string) {
	numbered, invalid := "byte/character positions are numbered from 1", "invalid byte/character position %s"
	if fields {
		numbered, invalid = "fields are numbered from 1", "invalid field value %s"
	}
	var rs []cutRange
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		lo, hi, dash := item, item, false
		if i := strings.IndexByte(item, '-'); i >= 0 {
			lo, hi, dash = item[:i], item[i+1:], true
		}
		if dash && lo == "" && hi == "" {
			return nil, "invalid range with no endpoint: -"
		}
		num := func(t string, dflt int) (int, string) {
			if t == "" {
				return dflt, ""
			}
			for k := 0; k < len(t); k++ {
				if t[k] < '0' || t[k] > '9' {
					return 0, fmt.Sprintf(invalid, quote(t[k:]))
				}
			}
			n, err := strconv.Atoi(t)
			if err != nil {
				n = math.MaxInt
			}
			if n == 0 {
				return 0, numbered
			}
			return n, ""
		}
		l, msg := num(lo, 1)
		if msg != "" {
			return nil, msg
		}
		h := l
		if dash {
			if h, msg = num(hi, math.MaxInt); msg != "" {
				return nil, msg
			}
		}
		if h < l {
			return nil, "invalid decreasing range"
		}
		rs = append(rs, cutRange{l, h})
	}
	if len(rs) == 0 {
		return nil, numbered
	}
	return rs, ""
}

func runCut(c *cmd, f flags, ops []string) int {
	mode, list := "", ""
	for _, k := range []string{"b", "c", "f"} {
		if v, ok := f.last(k); ok {
			if mode != "" {
				return c.usage("only one list may be specified")
			}
			mode, list = k, v
		}
	}
	if mode == "" {
		return c.usage("you must specify a list of bytes, characters, or fields")
	}
	delim := byte('\t')
	if d, ok := f.last("d"); ok {
		if mode != "f" {
			return c.usage("an input delimiter may be specified only when operating on fields")
		}
		if len(d) > 1 {
			return c.usage("the delimiter must be a single character")
		}
		delim = 0
		if d != "" {
			delim = d[0]
		}
	}
	if f.has("s") && mode != "f" {
		c.errorf("suppressing non-delimited lines makes sense\n\tonly when operating on fields")
		fmt.Fprintf(c.err, "Try '%s --help' for more information.\n", c.name)
		return 1
	}
	rs, msg := parseCutList(list, mode == "f")
	if msg != "" {
		return c.usage("%s", msg)
	}
	complement := f.has("complement")
	selected := func(i int) bool {
		for _, r := range rs {
			if i >= r.lo && i <= r.hi {
				return !complement
			}
		}
		return complement
	}
	outDelim, hasOut := f.last("output-delimiter")
	if !hasOut && mode == "f" {
		outDelim = string(delim)
	}
	eol := byte('\n')
	if f.has("z") {
		eol = 0
	}
	if len(ops) == 0 {
		ops = []string{"-"}
	}
	w := bufio.NewWriterSize(c.out, 64<<10)
	status := 0
	for _, op := range ops {
		r, done, err := c.openIn(op)
		if err != nil {
			c.errorf("%s: %s", op, errText(err))
			status = 1
			continue
		}
		br := bufio.NewReaderSize(r, 64<<10)
		for !c.stopped() {
			line, rerr := c.readLine(br, eol)
			if len(line) > 0 {
				line = bytes.TrimSuffix(line, []byte{eol})
				if mode == "f" {
					if bytes.IndexByte(line, delim) < 0 {
						if !f.has("s") {
							w.Write(line)
							w.WriteByte(eol)
						}
					} else {
						first := true
						for i, fld := range bytes.Split(line, []byte{delim}) {
							if !selected(i + 1) {
								continue
							}
							if !first {
								w.WriteString(outDelim)
							}
							first = false
							w.Write(fld)
						}
						w.WriteByte(eol)
					}
				} else {
					prev := 0
					for i, b := range line {
						if !selected(i + 1) {
							continue
						}
						if hasOut && prev > 0 && prev != i {
							w.WriteString(outDelim)
						}
						prev = i + 1
						w.WriteByte(b)
					}
					w.WriteByte(eol)
				}
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				if c.stopped() {
					break
				}
				c.errorf("%s: %s", op, errText(rerr))
				status = 1
				break
			}
		}
		done()
	}
	if err := w.Flush(); err != nil && c.sigpipe {
		return 141
	}
	return status
}
