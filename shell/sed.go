package shell

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "sed", summary: "stream editor (s y d p q = {} with addresses and ranges; -n -e -E -i -s)",
		synopsis: "[OPTION]... {script-only-if-no-other-script} [input-file]...", run: runSed, options: []option{
			{short: 'n', long: "quiet", key: "n", help: "suppress automatic printing of pattern space"},
			{long: "silent", key: "n", help: "suppress automatic printing of pattern space"},
			{short: 'e', long: "expression", arg: needArg, help: "add the script to the commands to be executed"},
			{short: 'E', long: "regexp-extended", key: "E", help: "use extended regular expressions in the script"},
			{short: 'r', key: "E", help: "use extended regular expressions in the script"},
			{short: 'i', long: "in-place", arg: optArg, help: "edit files in place (makes backup if SUFFIX supplied)"},
			{short: 's', long: "separate", help: "consider files as separate rather than as a single continuous long stream"},
		}})
}

// sedAddr is one address: a line number, $, a regular expression (nil
// for the last one used), first~step, or +N (second address only).
type sedAddr struct {
	kind    byte // 'n' number, '$', '/' regexp, '~' step, '+' relative
	n, step int
	re      *regexp.Regexp
	empty   bool // "//": the last regular expression used
}

// sedRepl is one piece of a replacement: literal text, or group g
// (0 for &).
type sedRepl struct {
	lit   string
	group int // -1 for literal
}

type sedCmd struct {
	a1, a2 *sedAddr
	neg    bool
	name   byte
	// s
	re     *regexp.Regexp
	reLast bool // s//.../: the last regular expression used
	repl   []sedRepl
	global bool
	nth    int
	print  bool
	// y
	ymap [256]byte
	// q
	exit int
	// a i c
	text string
	// {: index of the matching }
	end int
	// range state
	active bool
	endAt  int
}

// sedError is a script error, placed as GNU's sed places it.
type sedError struct {
	expr, char int
	msg        string
}

func (e *sedError) Error() string {
	return fmt.Sprintf("-e expression #%d, char %d: %s", e.expr, e.char, e.msg)
}

// sedParser reads a script: the -e expressions joined by newlines.
type sedParser struct {
	s      string
	i      int
	starts []int // where each expression starts in s
	ere    bool
}

func (p *sedParser) fail(at int, msg string) error {
	e := &sedError{expr: 1, msg: msg}
	for k, st := range p.starts {
		if at >= st {
			e.expr, e.char = k+1, at-st+1
		}
	}
	return e
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }

func (p *sedParser) skipSpace() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// compile turns a sed regular expression into Go's.
func (p *sedParser) compile(re string, at int, fold bool) (*regexp.Regexp, error) {
	expr := breToGo(re)
	if p.ere {
		expr = ereToGo(re)
	}
	if fold {
		expr = "(?i)" + expr
	}
	r, err := regexp.Compile(expr)
	if err != nil {
		return nil, p.fail(at, grepErr(err))
	}
	r.Longest()
	return r, nil
}

// delimited reads up to the unescaped delimiter d: "\d" is d, "\n" a
// newline, other escapes stay for the regexp or replacement.
func (p *sedParser) delimited(d byte, what string, start int) (string, error) {
	var b strings.Builder
	for {
		if p.eof() {
			return "", p.fail(len(p.s)-1, fmt.Sprintf("unterminated `%s' command", what))
		}
		ch := p.s[p.i]
		p.i++
		switch {
		case ch == d:
			return b.String(), nil
		case ch == '\n' && what != "address":
			return "", p.fail(p.i-1, fmt.Sprintf("unterminated `%s' command", what))
		case ch == '\\' && !p.eof():
			n := p.s[p.i]
			p.i++
			switch {
			case n == d:
				b.WriteByte(d)
			case n == 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		default:
			b.WriteByte(ch)
		}
	}
}

func (p *sedParser) number() (int, bool) {
	st := p.i
	for !p.eof() && isDigit(p.s[p.i]) {
		p.i++
	}
	if st == p.i {
		return 0, false
	}
	n, err := strconv.Atoi(p.s[st:p.i])
	if err != nil {
		n = int(^uint(0) >> 1)
	}
	return n, true
}

func (p *sedParser) address() (*sedAddr, error) {
	if p.eof() {
		return nil, nil
	}
	ch := p.s[p.i]
	switch {
	case isDigit(ch):
		n, _ := p.number()
		if !p.eof() && p.s[p.i] == '~' {
			p.i++
			step, _ := p.number()
			return &sedAddr{kind: '~', n: n, step: step}, nil
		}
		return &sedAddr{kind: 'n', n: n}, nil
	case ch == '$':
		p.i++
		return &sedAddr{kind: '$'}, nil
	case ch == '/' || ch == '\\':
		start := p.i
		p.i++
		d := byte('/')
		if ch == '\\' {
			if p.eof() {
				return nil, p.fail(p.i, "unexpected `,'")
			}
			d = p.s[p.i]
			p.i++
		}
		re, err := p.delimited(d, "address", start)
		if err != nil {
			return nil, p.fail(len(p.s)-1, "unterminated address regex")
		}
		fold := false
		for !p.eof() && (p.s[p.i] == 'I') {
			fold = true
			p.i++
		}
		if re == "" {
			return &sedAddr{kind: '/', empty: true}, nil
		}
		r, err := p.compile(re, p.i-1, fold)
		if err != nil {
			return nil, err
		}
		return &sedAddr{kind: '/', re: r}, nil
	}
	return nil, nil
}

// endCommand checks what may follow a command: blanks, then ; newline
// } # or the end.
func (p *sedParser) endCommand() error {
	p.skipSpace()
	if p.eof() {
		return nil
	}
	switch p.s[p.i] {
	case ';', '\n':
		p.i++
		return nil
	case '}', '#':
		return nil
	}
	return p.fail(p.i, "extra characters after command")
}

func (p *sedParser) parse() ([]*sedCmd, error) {
	var cmds []*sedCmd
	var open []int
	for {
		for !p.eof() && strings.IndexByte(" \t\n;", p.s[p.i]) >= 0 {
			p.i++
		}
		if p.eof() {
			break
		}
		if p.s[p.i] == '#' {
			for !p.eof() && p.s[p.i] != '\n' {
				p.i++
			}
			continue
		}
		c := &sedCmd{}
		var err error
		if c.a1, err = p.address(); err != nil {
			return nil, err
		}
		if c.a1 != nil {
			p.skipSpace()
			if !p.eof() && p.s[p.i] == ',' {
				p.i++
				p.skipSpace()
				if !p.eof() && (p.s[p.i] == '+' || p.s[p.i] == '~') {
					kind := p.s[p.i]
					p.i++
					n, ok := p.number()
					if !ok {
						return nil, p.fail(p.i, "expected newer version of sed")
					}
					c.a2 = &sedAddr{kind: kind, n: n}
				} else if c.a2, err = p.address(); err != nil {
					return nil, err
				} else if c.a2 == nil {
					return nil, p.fail(p.i, "unexpected `,'")
				}
			}
		}
		p.skipSpace()
		for !p.eof() && p.s[p.i] == '!' {
			c.neg = true
			p.i++
			p.skipSpace()
		}
		if p.eof() {
			return nil, p.fail(len(p.s)-1, "missing command")
		}
		c.name = p.s[p.i]
		at := p.i
		p.i++
		switch c.name {
		case '{':
			open = append(open, len(cmds))
			cmds = append(cmds, c)
			continue
		case '}':
			if c.a1 != nil {
				return nil, p.fail(at, "} doesn't want any addresses")
			}
			if len(open) == 0 {
				return nil, p.fail(at, "unexpected `}'")
			}
			cmds[open[len(open)-1]].end = len(cmds)
			open = open[:len(open)-1]
			cmds = append(cmds, c)
			if err := p.endCommand(); err != nil {
				return nil, err
			}
			continue
		case 'd', 'p', '=', 'n':
			err = p.endCommand()
		case 'q':
			if c.a2 != nil {
				return nil, p.fail(at, "command only uses one address")
			}
			p.skipSpace()
			c.exit, _ = p.number()
			err = p.endCommand()
		case 'a', 'i', 'c':
			c.text = p.readText()
		case 's':
			err = p.parseS(c, at)
		case 'y':
			err = p.parseY(c)
		default:
			return nil, p.fail(at, fmt.Sprintf("unknown command: `%c'", c.name))
		}
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	if len(open) > 0 {
		return nil, p.fail(-1, "unmatched `{'") // GNU places it at char 0
	}
	return cmds, nil
}

// readText reads the text of a, i and c as GNU's sed does: "a\" and a
// newline, or "a\TEXT" keeping TEXT's leading blanks, or the one-line
// "a TEXT" without them; a backslash at a line's end continues the text
// on the next line, and one before another character is dropped.
func (p *sedParser) readText() string {
	p.skipSpace()
	if !p.eof() && p.s[p.i] == '\\' {
		p.i++
		if !p.eof() && p.s[p.i] == '\n' {
			p.i++
		}
	}
	var b strings.Builder
	for !p.eof() {
		ch := p.s[p.i]
		p.i++
		if ch == '\n' {
			break
		}
		if ch == '\\' && !p.eof() {
			ch = p.s[p.i]
			p.i++
		}
		b.WriteByte(ch)
	}
	return b.String()
}

func (p *sedParser) parseS(c *sedCmd, at int) error {
	if p.eof() {
		return p.fail(at, "unterminated `s' command")
	}
	d := p.s[p.i]
	p.i++
	re, err := p.delimited(d, "s", at)
	if err != nil {
		return err
	}
	reAt := p.i
	raw, err := p.delimited(d, "s", at)
	if err != nil {
		return err
	}
	fold := false
	for !p.eof() {
		ch := p.s[p.i]
		switch {
		case ch == 'g':
			c.global = true
		case ch == 'p':
			c.print = true
		case ch == 'i' || ch == 'I':
			fold = true
		case isDigit(ch):
			n, _ := p.number()
			if n == 0 {
				return p.fail(p.i-1, "number option to `s' command may not be zero")
			}
			c.nth = n
			continue
		case ch == ';' || ch == '\n' || ch == '}' || ch == ' ' || ch == '\t' || ch == '#':
		default:
			return p.fail(p.i, "unknown option to `s'")
		}
		if strings.IndexByte(";\n} \t#", ch) >= 0 {
			break
		}
		p.i++
	}
	if err := p.endCommand(); err != nil {
		return err
	}
	if re == "" {
		c.reLast = true
	} else if c.re, err = p.compile(re, reAt-1, fold); err != nil {
		return err
	}
	groups := 0
	if c.re != nil {
		groups = c.re.NumSubexp()
	}
	for i := 0; i < len(raw); i++ {
		ch := raw[i]
		switch {
		case ch == '&':
			c.repl = append(c.repl, sedRepl{group: 0})
		case ch == '\\' && i+1 < len(raw):
			i++
			n := raw[i]
			if n >= '0' && n <= '9' {
				g := int(n - '0')
				if c.re != nil && g > groups {
					return p.fail(p.i-1, fmt.Sprintf("invalid reference \\%d on `s' command's RHS", g))
				}
				c.repl = append(c.repl, sedRepl{group: g})
				continue
			}
			lit := string(n)
			if e, ok := map[byte]string{'n': "\n", 't': "\t"}[n]; ok {
				lit = e
			}
			c.repl = append(c.repl, sedRepl{lit: lit, group: -1})
		default:
			c.repl = append(c.repl, sedRepl{lit: string(ch), group: -1})
		}
	}
	return nil
}

func (p *sedParser) parseY(c *sedCmd) error {
	at := p.i - 1
	if p.eof() {
		return p.fail(at, "unterminated `y' command")
	}
	d := p.s[p.i]
	p.i++
	src, err := p.delimited(d, "y", at)
	if err != nil {
		return err
	}
	dst, err := p.delimited(d, "y", at)
	if err != nil {
		return err
	}
	un := func(s string) string { return strings.ReplaceAll(s, `\\`, `\`) }
	src, dst = un(src), un(dst)
	if len(src) != len(dst) {
		return p.fail(p.i-1, "strings for `y' command are different lengths")
	}
	for b := range c.ymap {
		c.ymap[b] = byte(b)
	}
	for k := range src {
		c.ymap[src[k]] = dst[k]
	}
	return p.endCommand()
}

// sedRun is the state of one run over a stream.
type sedRun struct {
	c      *cmd
	cmds   []*sedCmd
	quiet  bool
	lastRe *regexp.Regexp
	line   int
	out    *bufio.Writer
	quit   bool
	status int
	// appended is the text of a commands, written at the cycle's end.
	appended []string
	// missingNL is set after a last line written without its newline:
	// anything written after it starts with one, as GNU's sed does.
	missingNL bool
}

// write writes b to the output, after the newline a last line lacked.
func (r *sedRun) write(b []byte) {
	if r.missingNL {
		r.out.WriteByte('\n')
		r.missingNL = false
	}
	r.out.Write(b)
}

// flushAppended writes the queued a texts.
func (r *sedRun) flushAppended() {
	for _, t := range r.appended {
		r.write([]byte(t + "\n"))
	}
	r.appended = r.appended[:0]
}

func (r *sedRun) matchRe(a *sedAddr, ps []byte) bool {
	re := a.re
	if a.empty {
		re = r.lastRe
	}
	if re == nil {
		return false
	}
	r.lastRe = re
	return re.Match(ps)
}

func (r *sedRun) match1(a *sedAddr, ps []byte, last bool) bool {
	switch a.kind {
	case 'n':
		return r.line == a.n
	case '$':
		return last
	case '~':
		if a.step <= 0 {
			return r.line == a.n
		}
		return r.line >= a.n && (r.line-a.n)%a.step == 0
	}
	return r.matchRe(a, ps)
}

// selected is GNU sed's match_address_p.
func (r *sedRun) selected(c *sedCmd, ps []byte, last bool) bool {
	switch {
	case c.a1 == nil:
		return true
	case c.a2 == nil:
		return r.match1(c.a1, ps, last)
	case c.active:
		switch c.a2.kind {
		case 'n', '+':
			if r.line >= c.endAt {
				c.active = false
			}
			return r.line <= c.endAt
		case '~':
			if c.a2.n <= 0 || r.line%c.a2.n == 0 {
				c.active = false
			}
			return true
		}
		if r.match1(c.a2, ps, last) {
			c.active = false
		}
		return true
	}
	if !r.match1(c.a1, ps, last) {
		return false
	}
	switch c.a2.kind {
	case 'n':
		c.endAt = c.a2.n
		c.active = r.line < c.endAt
	case '+':
		c.endAt = r.line + c.a2.n
		c.active = r.line < c.endAt
	case '~':
		c.active = c.a2.n > 0 && r.line%c.a2.n != 0
	default:
		c.active = !(c.a2.kind == '$' && last)
	}
	return true
}

// substitute is the s command on ps; it reports whether it replaced.
func (r *sedRun) substitute(c *sedCmd, ps []byte) ([]byte, bool) {
	re := c.re
	if c.reLast {
		re = r.lastRe
	}
	if re == nil {
		return ps, false
	}
	r.lastRe = re
	var out []byte
	done, n, pos, prevEnd := false, 0, 0, -1
	for start := 0; start <= len(ps); {
		m := re.FindSubmatchIndex(ps[start:])
		if m == nil {
			break
		}
		for k := range m {
			if m[k] >= 0 {
				m[k] += start
			}
		}
		s, e := m[0], m[1]
		if s == e && s == prevEnd {
			// An empty match right after a match is not one (POSIX).
			if s == len(ps) {
				break
			}
			start = s + 1
			continue
		}
		n++
		if n >= max(c.nth, 1) && (c.global || n == max(c.nth, 1)) {
			out = append(out, ps[pos:s]...)
			for _, part := range c.repl {
				if part.group < 0 {
					out = append(out, part.lit...)
				} else if 2*part.group+1 < len(m) && m[2*part.group] >= 0 {
					out = append(out, ps[m[2*part.group]:m[2*part.group+1]]...)
				}
			}
			pos = e
			done = true
			if !c.global {
				break
			}
		}
		prevEnd = e
		if e == s {
			start = e + 1
		} else {
			start = e
		}
	}
	if !done {
		return ps, false
	}
	return append(out, ps[pos:]...), true
}

// cycle runs the script on one line; it returns the pattern space to
// print (nil when deleted) and whether to print it.
func (r *sedRun) cycle(ps []byte, last bool, next func() ([]byte, bool, bool)) ([]byte, bool) {
	for pc := 0; pc < len(r.cmds); pc++ {
		c := r.cmds[pc]
		if c.name == '}' {
			continue
		}
		if r.selected(c, ps, last) == c.neg {
			if c.name == '{' {
				pc = c.end
			}
			continue
		}
		switch c.name {
		case 'd':
			return nil, false
		case 'p':
			r.write(append(ps[:len(ps):len(ps)], '\n'))
		case '=':
			r.write(fmt.Appendf(nil, "%d\n", r.line))
		case 'a':
			r.appended = append(r.appended, c.text)
		case 'i':
			r.write([]byte(c.text + "\n"))
		case 'c':
			// A range prints the text once, at its end.
			if c.a2 == nil || c.neg || !c.active {
				r.write([]byte(c.text + "\n"))
			}
			return nil, false
		case 'n':
			if !r.quiet {
				r.write(append(ps[:len(ps):len(ps)], '\n'))
			}
			r.flushAppended()
			nps, nlast, ok := next()
			if !ok {
				// GNU: without a next line, sed ends without running
				// the rest (and prints nothing more under -n).
				r.quit = true
				return nil, false
			}
			ps, last = nps, nlast
		case 'q':
			r.quit, r.status = true, c.exit
			return ps, !r.quiet
		case 's':
			var did bool
			if ps, did = r.substitute(c, ps); did && c.print {
				r.write(append(ps[:len(ps):len(ps)], '\n'))
			}
		case 'y':
			ps = append([]byte(nil), ps...)
			for k, b := range ps {
				ps[k] = c.ymap[b]
			}
		}
	}
	return ps, !r.quiet
}

// stream runs the script over the lines of src, writing to out.
// missingNL is set when the last line had no newline: its output has none.
func (r *sedRun) stream(src *bufio.Reader) error {
	read := func() ([]byte, bool, error) {
		l, err := r.c.readLine(src, '\n')
		if len(l) == 0 {
			return nil, false, err
		}
		nl := l[len(l)-1] == '\n'
		if nl {
			l = l[:len(l)-1]
		}
		return l, nl, nil
	}
	cur, curNL, err := read()
	if cur == nil {
		if err == io.EOF {
			return nil
		}
		return err
	}
	for !r.quit && !r.c.stopped() {
		nextLine, nextNL, rerr := read()
		if nextLine == nil && rerr != nil && rerr != io.EOF {
			return rerr
		}
		last := nextLine == nil
		r.line++
		fetch := func() ([]byte, bool, bool) {
			if nextLine == nil {
				return nil, false, false
			}
			// "n": the next line becomes the pattern space.
			cur, curNL = nextLine, nextNL
			r.line++
			nextLine, nextNL, _ = read()
			return cur, nextLine == nil, true
		}
		ps, show := r.cycle(cur, last, fetch)
		if ps != nil && show {
			r.write(ps)
			if curNL {
				r.out.WriteByte('\n')
			} else {
				r.missingNL = true
			}
		}
		r.flushAppended()
		if nextLine == nil {
			break
		}
		cur, curNL = nextLine, nextNL
	}
	return nil
}

func runSed(c *cmd, f flags, ops []string) int {
	exprs := f.all("e")
	if len(exprs) == 0 {
		if len(ops) == 0 {
			fmt.Fprintln(c.err, "Usage: sed [OPTION]... {script-only-if-no-other-script} [input-file]...")
			return 1
		}
		exprs, ops = ops[:1], ops[1:]
	}
	p := &sedParser{ere: f.has("E")}
	for _, e := range exprs {
		p.starts = append(p.starts, len(p.s))
		p.s += e + "\n"
	}
	p.s = strings.TrimSuffix(p.s, "\n")
	cmds, err := p.parse()
	if err != nil {
		c.errorf("%s", err)
		return 1
	}
	_, inPlace := f.last("i")
	run := &sedRun{c: c, cmds: cmds, quiet: f.has("n")}
	if len(ops) == 0 {
		if inPlace {
			c.errorf("no input files")
			return 4
		}
		ops = []string{"-"}
	}
	status := 0
	if inPlace {
		suffix := f.value("i")
		for _, op := range ops {
			if run.quit {
				break
			}
			data, err := c.readFile(op)
			if err != nil {
				c.errorf("can't read %s: %s", op, errText(err))
				status = 2
				continue
			}
			var buf bytes.Buffer
			run.out = bufio.NewWriter(&buf)
			run.line, run.missingNL = 0, false
			for _, cm := range cmds {
				cm.active = false
			}
			if err := run.stream(bufio.NewReader(bytes.NewReader(data))); err != nil {
				c.errorf("read error on %s: %s", op, errText(err))
				status = 2
				continue
			}
			run.out.Flush()
			if suffix != "" {
				bak := strings.ReplaceAll(suffix, "*", baseName(op))
				if !strings.Contains(suffix, "*") {
					bak = op + suffix
				}
				if err := c.writeFile(bak, data); err != nil {
					c.errorf("couldn't open file %s: %s", bak, errText(err))
					return 4
				}
			}
			if err := c.writeFile(op, buf.Bytes()); err != nil {
				c.errorf("couldn't open file %s: %s", op, errText(err))
				return 4
			}
		}
		return max(status, run.status)
	}
	run.out = bufio.NewWriterSize(c.out, 64<<10)
	// The inputs are one stream (without -s), so that $ is the last line
	// of the last file and line numbers run on; each is opened when the
	// stream reaches it, so that "sed 2q a b" never opens b.
	groups := [][]string{ops}
	if f.has("s") {
		groups = nil
		for _, op := range ops {
			groups = append(groups, []string{op})
		}
	}
	for _, g := range groups {
		if run.quit {
			break
		}
		in := &sedInputs{c: c, names: g}
		if f.has("s") {
			run.line = 0
			for _, cm := range cmds {
				cm.active = false
			}
		}
		err := run.stream(bufio.NewReaderSize(in, 64<<10))
		in.close()
		if err != nil && !c.stopped() {
			c.errorf("read error: %s", errText(err))
			status = 2
		}
		if in.failed {
			status = 2
		}
	}
	if err := run.out.Flush(); err != nil && c.sigpipe {
		return 141
	}
	if run.status != 0 {
		return run.status
	}
	return status
}

// writeFile replaces name's contents with data, keeping the file (and
// creating it with mode 0666 less the umask when missing).
func (c *cmd) writeFile(name string, data []byte) error {
	fd, err := c.p.Open(name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	f := c.p.NewFile(fd, name)
	defer f.Close()
	_, err = f.Write(data)
	return err
}

// sedInputs reads the named inputs one after the other, opening each
// when the one before it ends; one that cannot be opened is reported
// and passed over, as GNU's sed does.
type sedInputs struct {
	c      *cmd
	names  []string
	cur    io.Reader
	done   func()
	failed bool
}

func (s *sedInputs) Read(b []byte) (int, error) {
	for {
		if s.cur == nil {
			if len(s.names) == 0 {
				return 0, io.EOF
			}
			name := s.names[0]
			s.names = s.names[1:]
			r, done, err := s.c.openIn(name)
			if err != nil {
				s.c.errorf("can't read %s: %s", name, errText(err))
				s.failed = true
				continue
			}
			s.cur, s.done = r, done
		}
		n, err := s.cur.Read(b)
		if err == io.EOF {
			s.close()
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

func (s *sedInputs) close() {
	if s.done != nil {
		s.done()
	}
	s.cur, s.done = nil, nil
}
