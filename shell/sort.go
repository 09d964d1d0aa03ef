package shell

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "sort", summary: "sort lines of text files (-n -r -k -t -u -s -o -b -f)",
		usageStatus: 2, run: runSort, options: []option{
			{short: 'b', long: "ignore-leading-blanks", help: "ignore leading blanks"},
			{short: 'f', long: "ignore-case", help: "fold lower case to upper case characters"},
			{short: 'n', long: "numeric-sort", help: "compare according to string numerical value"},
			{short: 'r', long: "reverse", help: "reverse the result of comparisons"},
			{short: 'k', long: "key", arg: needArg, help: "sort via a key; KEYDEF gives location and type"},
			{short: 'o', long: "output", arg: needArg, help: "write result to FILE instead of standard output"},
			{short: 's', long: "stable", help: "stabilize sort by disabling last-resort comparison"},
			{short: 't', long: "field-separator", arg: needArg, help: "use SEP instead of non-blank to blank transition"},
			{short: 'u', long: "unique", help: "output only the first of an equal run"},
		}})
	register(&builtin{name: "uniq", summary: "report or omit repeated lines (-c -d -u)", synopsis: "[OPTION]... [INPUT [OUTPUT]]",
		maxOps: 2, run: runUniq, options: []option{
			{short: 'c', long: "count", help: "prefix lines by the number of occurrences"},
			{short: 'd', long: "repeated", help: "only print duplicate lines, one for each group"},
			{short: 'u', long: "unique", help: "only print unique lines"},
		}})
}

// sortKey is one -k KEYDEF, with GNU sort's zero-based field numbers:
// eword < 0 means the end of the line, echar == 0 the end of the field.
type sortKey struct {
	sword, schar, eword, echar int
	skipSBlanks, skipEBlanks   bool
	numeric, reverse, fold     bool
}

// hasOrder reports whether the key has options of its own; a key
// without any takes the global ones.
func (k *sortKey) hasOrder() bool {
	return k.skipSBlanks || k.skipEBlanks || k.numeric || k.reverse || k.fold
}

// parseKeyDef reads "F[.C][OPTS][,F[.C][OPTS]]" as GNU sort does.
func parseKeyDef(s string) (sortKey, string) {
	k := sortKey{eword: -1}
	bad := func(what string) (sortKey, string) {
		return k, fmt.Sprintf("%s: invalid field specification %s", what, quote(s))
	}
	num := func(p string) (int, string, bool) {
		i := 0
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, p, false
		}
		n, err := strconv.Atoi(p[:i])
		if err != nil {
			n = int(^uint(0) >> 1)
		}
		return n, p[i:], true
	}
	opts := func(p string, end bool) (string, bool) {
		for len(p) > 0 && p[0] != ',' {
			switch p[0] {
			case 'b':
				if end {
					k.skipEBlanks = true
				} else {
					k.skipSBlanks = true
				}
			case 'n':
				k.numeric = true
			case 'r':
				k.reverse = true
			case 'f':
				k.fold = true
			default:
				return p, false
			}
			p = p[1:]
		}
		return p, true
	}
	n, rest, ok := num(s)
	if !ok {
		return k, fmt.Sprintf("invalid number at field start: invalid count at start of %s", quote(s))
	}
	if n == 0 {
		return bad("field number is zero")
	}
	k.sword = n - 1
	if strings.HasPrefix(rest, ".") {
		if n, rest, ok = num(rest[1:]); !ok {
			return k, fmt.Sprintf("invalid number after '.': invalid count at start of %s", quote(rest[1:]))
		}
		if n == 0 {
			return bad("character offset is zero")
		}
		k.schar = n - 1
	}
	if rest, ok = opts(rest, false); !ok {
		return k, fmt.Sprintf("stray character in field spec: invalid field specification %s", quote(s))
	}
	if strings.HasPrefix(rest, ",") {
		if n, rest, ok = num(rest[1:]); !ok {
			return k, fmt.Sprintf("invalid number after ',': invalid count at start of %s", quote(rest[1:]))
		}
		if n == 0 {
			return bad("field number is zero")
		}
		k.eword = n - 1
		if strings.HasPrefix(rest, ".") {
			if k.echar, rest, ok = num(rest[1:]); !ok {
				return k, fmt.Sprintf("invalid number after '.': invalid count at start of %s", quote(rest[1:]))
			}
		}
		if rest, ok = opts(rest, true); !ok || rest != "" {
			return k, fmt.Sprintf("stray character in field spec: invalid field specification %s", quote(s))
		}
	}
	return k, ""
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' }

// sorter holds the options of one sort.
type sorter struct {
	keys    []sortKey
	tab     int // the -t byte, or -1 for blank-separated fields
	reverse bool
	stable  bool // -s or -u: no last-resort comparison
}

// begField and limField are GNU sort's begfield and limfield: where a
// key starts and ends in line.
func (s *sorter) begField(line []byte, k *sortKey) int {
	p, lim := 0, len(line)
	for w := k.sword; p < lim && w > 0; w-- {
		if s.tab >= 0 {
			for p < lim && int(line[p]) != s.tab {
				p++
			}
			if p < lim {
				p++
			}
		} else {
			for p < lim && isBlank(line[p]) {
				p++
			}
			for p < lim && !isBlank(line[p]) {
				p++
			}
		}
	}
	if k.skipSBlanks {
		for p < lim && isBlank(line[p]) {
			p++
		}
	}
	return min(p+k.schar, lim)
}

func (s *sorter) limField(line []byte, k *sortKey) int {
	if k.eword < 0 {
		return len(line)
	}
	p, lim := 0, len(line)
	eword, echar := k.eword, k.echar
	if echar == 0 {
		eword++
	}
	for ; p < lim && eword > 0; eword-- {
		if s.tab >= 0 {
			for p < lim && int(line[p]) != s.tab {
				p++
			}
			if p < lim && (eword > 1 || echar != 0) {
				p++
			}
		} else {
			for p < lim && isBlank(line[p]) {
				p++
			}
			for p < lim && !isBlank(line[p]) {
				p++
			}
		}
	}
	if echar != 0 {
		if k.skipEBlanks {
			for p < lim && isBlank(line[p]) {
				p++
			}
		}
		p = min(lim, p+echar)
	}
	return p
}

// compare is GNU sort's compare: the keys in turn, then, unless -s or
// -u, the whole lines byte by byte.
func (s *sorter) compare(a, b []byte) int {
	for i := range s.keys {
		k := &s.keys[i]
		ta, la := s.begField(a, k), s.limField(a, k)
		tb, lb := s.begField(b, k), s.limField(b, k)
		ka, kb := a[ta:max(ta, la)], b[tb:max(tb, lb)]
		var d int
		switch {
		case k.numeric:
			d = numCompare(ka, kb)
		case k.fold:
			d = bytes.Compare(bytes.ToUpper(ka), bytes.ToUpper(kb))
		default:
			d = bytes.Compare(ka, kb)
		}
		if d != 0 {
			if k.reverse {
				return -d
			}
			return d
		}
	}
	if s.stable && len(s.keys) > 0 {
		return 0
	}
	d := bytes.Compare(a, b)
	if s.reverse {
		return -d
	}
	return d
}

// numCompare compares the numbers at the starts of a and b as sort -n
// does: leading blanks, an optional minus, digits and a decimal point; no
// number reads as zero. Digits are compared as strings, so any length
// is exact.
func numCompare(a, b []byte) int {
	na, ia, fa := splitNum(a)
	nb, ib, fb := splitNum(b)
	zero := func(i, f []byte) bool { return len(i) == 0 && len(f) == 0 }
	if zero(ia, fa) {
		na = false
	}
	if zero(ib, fb) {
		nb = false
	}
	if na != nb {
		if na {
			return -1
		}
		return 1
	}
	d := len(ia) - len(ib)
	if d == 0 {
		d = bytes.Compare(ia, ib)
	}
	if d == 0 {
		d = bytes.Compare(fa, fb)
	}
	if d > 0 {
		d = 1
	} else if d < 0 {
		d = -1
	}
	if na {
		return -d
	}
	return d
}

// splitNum returns the sign, the integer digits without leading zeros
// and the fraction digits without trailing zeros of a's number.
func splitNum(a []byte) (neg bool, ip, fp []byte) {
	p := 0
	for p < len(a) && isBlank(a[p]) {
		p++
	}
	if p < len(a) && a[p] == '-' {
		neg = true
		p++
	}
	s := p
	for p < len(a) && a[p] >= '0' && a[p] <= '9' {
		p++
	}
	ip = bytes.TrimLeft(a[s:p], "0")
	if p < len(a) && a[p] == '.' {
		p++
		s = p
		for p < len(a) && a[p] >= '0' && a[p] <= '9' {
			p++
		}
		fp = bytes.TrimRight(a[s:p], "0")
	}
	return neg, ip, fp
}

// splitLines splits data into lines without their newlines; a last line
// without one counts.
func splitLines(data []byte) [][]byte {
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i])
		data = data[i+1:]
	}
	return lines
}

func runSort(c *cmd, f flags, ops []string) int {
	s := &sorter{tab: -1, reverse: f.has("r"), stable: f.has("s") || f.has("u")}
	if t, ok := f.last("t"); ok {
		switch {
		case t == "":
			c.errorf("empty tab")
			return 2
		case t == "\\0":
			s.tab = 0
		case len(t) > 1:
			c.errorf("multi-character tab %s", quote(t))
			return 2
		default:
			s.tab = int(t[0])
		}
	}
	global := sortKey{eword: -1, skipSBlanks: f.has("b"), skipEBlanks: f.has("b"),
		numeric: f.has("n"), reverse: f.has("r"), fold: f.has("f")}
	for _, kd := range f.all("k") {
		k, msg := parseKeyDef(kd)
		if msg != "" {
			c.errorf("%s", msg)
			return 2
		}
		if !k.hasOrder() {
			k.skipSBlanks, k.skipEBlanks = global.skipSBlanks, global.skipEBlanks
			k.numeric, k.reverse, k.fold = global.numeric, global.reverse, global.fold
		}
		s.keys = append(s.keys, k)
	}
	if len(s.keys) == 0 && global.hasOrder() {
		s.keys = append(s.keys, global)
	}
	if len(ops) == 0 {
		ops = []string{"-"}
	}
	var data []byte
	for _, op := range ops {
		r, done, err := c.openIn(op)
		if err == nil {
			var b []byte
			b, err = c.readAll(r)
			done()
			if len(b) > 0 && b[len(b)-1] != '\n' {
				b = append(b, '\n')
			}
			data = append(data, b...)
		}
		if err != nil {
			if c.stopped() {
				return 130
			}
			c.errorf("cannot read: %s: %s", op, errText(err))
			return 2
		}
	}
	lines := splitLines(data)
	sort.SliceStable(lines, func(i, j int) bool { return s.compare(lines[i], lines[j]) < 0 })
	out := c.out
	if name, ok := f.last("o"); ok {
		fd, err := c.p.Open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o666)
		if err != nil {
			c.errorf("open failed: %s: %s", name, errText(err))
			return 2
		}
		file := c.p.NewFile(fd, name)
		defer file.Close()
		out = file
	}
	w := bufio.NewWriterSize(out, 64<<10)
	for i, l := range lines {
		if f.has("u") && i > 0 && s.compare(lines[i-1], l) == 0 {
			continue
		}
		w.Write(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		if c.sigpipe {
			return 141
		}
		c.errorf("write failed: %s", errText(err))
		return 2
	}
	return 0
}

func runUniq(c *cmd, f flags, ops []string) int {
	in := "-"
	if len(ops) > 0 {
		in = ops[0]
	}
	r, done, err := c.openIn(in)
	if err != nil {
		c.errorf("%s: %s", in, errText(err))
		return 1
	}
	defer done()
	out := c.out
	if len(ops) == 2 && ops[1] != "-" {
		fd, err := c.p.Open(ops[1], unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o666)
		if err != nil {
			c.errorf("%s: %s", ops[1], errText(err))
			return 1
		}
		file := c.p.NewFile(fd, ops[1])
		defer file.Close()
		out = file
	}
	count, dups, uniques := f.has("c"), f.has("d"), f.has("u")
	w := bufio.NewWriterSize(out, 64<<10)
	br := bufio.NewReaderSize(r, 64<<10)
	var prev []byte
	n := 0
	flush := func() {
		if n == 0 || dups && n == 1 || uniques && n > 1 {
			return
		}
		if count {
			fmt.Fprintf(w, "%7d ", n)
		}
		w.Write(prev)
		w.WriteByte('\n')
	}
	for !c.stopped() {
		line, rerr := c.readLine(br, '\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(line, []byte("\n"))
			if n > 0 && bytes.Equal(line, prev) {
				n++
			} else {
				flush()
				prev, n = line, 1
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil && !c.stopped() {
			c.errorf("error reading %s: %s", quote(in), errText(rerr))
			w.Flush()
			return 1
		}
	}
	flush()
	if err := w.Flush(); err != nil && c.sigpipe {
		return 141
	}
	return 0
}
