package shell

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "grep", summary: "print lines that match patterns (-E -F -v -i -c -n -l -L -q -r -o -w -x -h -H -e -s)",
		synopsis: "[OPTION]... PATTERNS [FILE]...", usageStatus: 2, run: runGrep, options: []option{
			{short: 'E', long: "extended-regexp", help: "PATTERNS are extended regular expressions"},
			{short: 'F', long: "fixed-strings", help: "PATTERNS are strings"},
			{short: 'G', long: "basic-regexp", help: "PATTERNS are basic regular expressions"},
			{short: 'e', long: "regexp", arg: needArg, help: "use PATTERNS for matching"},
			{short: 'i', long: "ignore-case", help: "ignore case distinctions in patterns and data"},
			{short: 'w', long: "word-regexp", help: "match only whole words"},
			{short: 'x', long: "line-regexp", help: "match only whole lines"},
			{short: 'v', long: "invert-match", help: "select non-matching lines"},
			{short: 'c', long: "count", help: "print only a count of selected lines per FILE"},
			{short: 'l', long: "files-with-matches", help: "print only names of FILEs with selected lines"},
			{short: 'L', long: "files-without-match", help: "print only names of FILEs with no selected lines"},
			{short: 'n', long: "line-number", help: "print line number with output lines"},
			{short: 'o', long: "only-matching", help: "show only nonempty parts of lines that match"},
			{short: 'q', long: "quiet", key: "q", help: "suppress all normal output"},
			{long: "silent", key: "q", help: "suppress all normal output"},
			{short: 's', long: "no-messages", help: "suppress error messages"},
			{short: 'r', long: "recursive", help: "search directories recursively"},
			{short: 'H', long: "with-filename", help: "print file name with output lines"},
			{short: 'h', long: "no-filename", help: "suppress the file name prefix on output"},
		}})
}

// breToGo rewrites a POSIX basic regular expression (with GNU's \| \+ \?
// extensions) as Go's syntax: \( \) \{ \} \| \+ \? are the operators, ( ) {
// } | + ? are literal, and a * that starts the expression or a group is
// literal.
func breToGo(p string) string {
	var b strings.Builder
	atStart := true
	for i := 0; i < len(p); i++ {
		ch := p[i]
		switch {
		case ch == '\\' && i+1 < len(p):
			i++
			switch n := p[i]; n {
			case '(', ')', '{', '}', '|', '+', '?':
				b.WriteByte(n)
				atStart = n == '(' || n == '|'
				continue
			case '<', '>':
				b.WriteString(`\b`)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case ch == '[':
			j := bracketEnd(p, i)
			b.WriteString(p[i:j])
			i = j - 1
		case ch == '*' && atStart:
			b.WriteString(`\*`)
		case strings.IndexByte("(){}|+?", ch) >= 0:
			b.WriteByte('\\')
			b.WriteByte(ch)
		case ch == '^' && !atStart:
			b.WriteString(`\^`)
		default:
			b.WriteByte(ch)
		}
		atStart = ch == '^' && atStart
	}
	return b.String()
}

// ereToGo rewrites GNU's extended syntax where Go's differs: \< and \>
// are word boundaries.
func ereToGo(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			if p[i+1] == '<' || p[i+1] == '>' {
				b.WriteString(`\b`)
			} else {
				b.WriteString(p[i : i+2])
			}
			i++
		case p[i] == '[':
			j := bracketEnd(p, i)
			b.WriteString(p[i:j])
			i = j - 1
		default:
			b.WriteByte(p[i])
		}
	}
	return b.String()
}

// bracketEnd returns the index just past the bracket expression that
// starts at p[i], whose "]" first or after "^" is literal and whose
// [:class:] holds a "]".
func bracketEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && p[j] == '^' {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) && p[j] != ']' {
		if p[j] == '[' && j+1 < len(p) && (p[j+1] == ':' || p[j+1] == '=' || p[j+1] == '.') {
			if k := strings.Index(p[j+2:], string(p[j+1])+"]"); k >= 0 {
				j += k + 4
				continue
			}
		}
		j++
	}
	return min(j+1, len(p))
}

var backrefErr = regexp.MustCompile(`invalid escape sequence: .\\[1-9]`)

// grepErr turns Go's message for a bad pattern into GNU grep's words.
func grepErr(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "missing closing )"), strings.Contains(msg, "unexpected )"):
		if strings.Contains(msg, "unexpected )") {
			return "Unmatched ) or \\)"
		}
		return "Unmatched ( or \\("
	case strings.Contains(msg, "missing closing ]"):
		return "Unmatched [, [^, [:, [., or [="
	case strings.Contains(msg, "invalid repeat count"):
		return "Invalid content of \\{\\}"
	case strings.Contains(msg, "trailing backslash"):
		return "Trailing backslash"
	case backrefErr.MatchString(msg):
		return "back-references (\\1 to \\9) are not supported"
	}
	return msg
}

// grepper holds one grep's pattern and options.
type grepper struct {
	re                  *regexp.Regexp
	invert, word, only  bool
	count, names, quiet bool
	namesWithout        bool
	number              bool
	withName            bool
	w                   *bufio.Writer
	c                   *cmd
}

// isWordByte is GNU's word constituent: a letter, a digit or '_'.
func isWordByte(b byte) bool { return isAlpha(b) || isDigit(b) || b == '_' }

// matches returns the matches of line (all of them for -o, else the
// first), with -w's rule: a match must have no word constituent on
// either side; one that fails is tried shorter, then from further on.
func (g *grepper) matches(line []byte, all bool) [][2]int {
	var out [][2]int
	for start := 0; start <= len(line); {
		loc := g.re.FindIndex(line[start:])
		if loc == nil {
			break
		}
		s, e := start+loc[0], start+loc[1]
		if g.word {
			ok := false
			for ; e >= s; e-- {
				if (s == 0 || !isWordByte(line[s-1])) && (e == len(line) || !isWordByte(line[e])) {
					if m := g.re.FindIndex(line[s:e]); m != nil && m[0] == 0 && m[1] == e-s {
						ok = true
						break
					}
				}
			}
			if !ok {
				start = s + 1
				continue
			}
		}
		out = append(out, [2]int{s, e})
		if !all {
			break
		}
		if e == s {
			start = e + 1
		} else {
			start = e
		}
	}
	return out
}

// file searches one input; it reports whether a line was selected.
func (g *grepper) file(r io.Reader, name string) (bool, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(32 << 10)
	binary := bytes.IndexByte(head, 0) >= 0
	prefix := ""
	if g.withName {
		prefix = name + ":"
	}
	n, selected := 0, 0
	for lineNo := 1; !g.c.stopped(); lineNo++ {
		line, err := g.c.readLine(br, '\n')
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				break
			}
			return selected > 0, err
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		ms := g.matches(line, g.only && !g.invert)
		if (len(ms) > 0) == g.invert {
			continue
		}
		selected++
		n++
		if g.quiet || g.names || g.namesWithout {
			return true, nil
		}
		if g.count {
			continue
		}
		if binary {
			g.w.Flush()
			fmt.Fprintf(g.c.err, "grep: %s: binary file matches\n", name)
			return true, nil
		}
		num := ""
		if g.number {
			num = fmt.Sprintf("%d:", lineNo)
		}
		if g.only {
			for _, m := range ms {
				if m[1] > m[0] {
					g.w.WriteString(prefix + num)
					g.w.Write(line[m[0]:m[1]])
					g.w.WriteByte('\n')
				}
			}
			continue
		}
		g.w.WriteString(prefix + num)
		g.w.Write(line)
		if err := g.w.WriteByte('\n'); err != nil {
			return true, err
		}
	}
	if g.count {
		fmt.Fprintf(g.w, "%s%d\n", prefix, n)
	}
	return selected > 0, nil
}

func runGrep(c *cmd, f flags, ops []string) int {
	pats := f.all("e")
	if len(pats) == 0 {
		if len(ops) == 0 {
			fmt.Fprintln(c.err, "Usage: grep [OPTION]... PATTERNS [FILE]...")
			fmt.Fprintln(c.err, "Try 'grep --help' for more information.")
			return 2
		}
		pats, ops = []string{ops[0]}, ops[1:]
	}
	var alts []string
	mode := f.lastOf("E", "F", "G")
	for _, p := range pats {
		for _, p := range strings.Split(p, "\n") {
			if mode != "F" && (len(p)-len(strings.TrimRight(p, "\\")))%2 == 1 {
				c.errorf("Trailing backslash")
				return 2
			}
			switch mode {
			case "F":
				p = regexp.QuoteMeta(p)
			case "E":
				p = ereToGo(p)
			default:
				p = breToGo(p)
			}
			if f.has("x") {
				p = "^(?:" + p + ")$"
			}
			alts = append(alts, "(?:"+p+")")
		}
	}
	expr := strings.Join(alts, "|")
	if f.has("i") {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		c.errorf("%s", grepErr(err))
		return 2
	}
	re.Longest()
	recursive, implicitDot := f.has("r"), false
	if len(ops) == 0 {
		ops = []string{"-"}
		if recursive {
			ops, implicitDot = []string{"."}, true
		}
	}
	g := &grepper{re: re, invert: f.has("v"), word: f.has("w"), only: f.has("o"), count: f.has("c"),
		names: f.has("l"), namesWithout: f.has("L"), quiet: f.has("q"), number: f.has("n"),
		withName: len(ops) > 1 || recursive, w: bufio.NewWriterSize(c.out, 64<<10), c: c}
	switch f.lastOf("H", "h") {
	case "H":
		g.withName = true
	case "h":
		g.withName = false
	}
	anySelected, anyErr := false, false
	report := func(format string, a ...any) {
		anyErr = true
		if !f.has("s") {
			g.w.Flush()
			c.errorf(format, a...)
		}
	}
	var search func(op, shown string, top bool) bool
	search = func(op, shown string, top bool) bool {
		if op != "-" {
			st, err := c.p.Stat(op)
			if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				if !recursive {
					report("%s: Is a directory", shown)
					return false
				}
				ents, err := readDirents(c.p, op)
				if err != nil {
					report("%s: %s", shown, errText(err))
					return false
				}
				// The directory's own order, as GNU's fts walk without
				// a comparison gives it.
				for _, e := range ents {
					// -r follows no link below the top, and skips devices,
					// FIFOs and sockets there, as GNU's grep does.
					if e.Type != unix.DT_REG && e.Type != unix.DT_DIR && e.Type != unix.DT_UNKNOWN {
						continue
					}
					child := strings.TrimSuffix(shown, "/") + "/" + e.Name
					if top && implicitDot {
						child = e.Name // grep -r without a FILE names no "./"
					}
					if search(path.Join(op, e.Name), child, false) && g.quiet {
						return true
					}
				}
				return false
			}
		}
		r, done, err := c.openIn(op)
		if err != nil {
			report("%s: %s", shown, errText(err))
			return false
		}
		defer done()
		name := shown
		if op == "-" {
			name = "(standard input)"
		}
		sel, err := g.file(r, name)
		if err != nil && !c.stopped() {
			report("%s: %s", shown, errText(err))
		}
		if sel {
			anySelected = true
		}
		if sel && g.names {
			fmt.Fprintln(g.w, name)
		}
		if !sel && g.namesWithout {
			fmt.Fprintln(g.w, name)
		}
		return sel
	}
	for _, op := range ops {
		if search(op, op, true) && g.quiet {
			return 0
		}
	}
	if err := g.w.Flush(); err != nil && c.sigpipe {
		return 141
	}
	switch {
	case anyErr && !(g.quiet && anySelected):
		return 2
	case anySelected:
		return 0
	}
	return 1
}
