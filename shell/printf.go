package shell

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// printf replaces the interpreter's, which lacks most of bash's
// conversions (exec.go's overridden).
func init() {
	register(&builtin{name: "printf", summary: "format and print arguments, as bash's printf", synopsis: "FORMAT [ARGUMENTS]...",
		style: raw, run: runPrintf})
}

// printfState walks the arguments of one printf.
type printfState struct {
	c      *cmd
	args   []string
	used   int
	status int
}

func (p *printfState) next() (string, bool) {
	if p.used >= len(p.args) {
		return "", false
	}
	p.used++
	return p.args[p.used-1], true
}

// num reads an integer argument as bash does: decimal, 0x hex, 0 octal,
// a leading quote for a character's code; a bad one is reported and its
// valid prefix used.
func (p *printfState) num(s string) int64 {
	t := strings.TrimLeft(s, " \t\n")
	if len(t) > 0 && (t[0] == '\'' || t[0] == '"') {
		if len(t) == 1 {
			return 0
		}
		r, _ := utf8.DecodeRuneInString(t[1:])
		return int64(r)
	}
	if t == "" {
		return 0
	}
	i := 0
	if t[0] == '+' || t[0] == '-' {
		i++
	}
	base, st := 10, i
	switch {
	case strings.HasPrefix(t[i:], "0x") || strings.HasPrefix(t[i:], "0X"):
		base, st = 16, i+2
	case strings.HasPrefix(t[i:], "0"):
		base = 8
	}
	j := st
	for j < len(t) && strings.IndexByte("0123456789abcdefABCDEF"[:min(base, 10)+max(base-10, 0)*2], t[j]) >= 0 {
		j++
	}
	v, err := strconv.ParseInt(t[st:j], base, 64)
	if err != nil && j > st {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			p.c.errorf("warning: %s: Numerical result out of range", s)
		}
	}
	if t[0] == '-' {
		v = -v
	}
	if j != len(t) || j == st && base != 8 {
		p.c.errorf("%s: invalid number", s)
		p.status = 1
	}
	return v
}

func (p *printfState) float(s string) float64 {
	t := strings.TrimSpace(s)
	if len(t) > 0 && (t[0] == '\'' || t[0] == '"') {
		return float64(p.num(s))
	}
	if t == "" {
		return 0
	}
	// The longest prefix that parses, as strtold reads it.
	for j := len(t); j > 0; j-- {
		if v, err := strconv.ParseFloat(t[:j], 64); err == nil || isRangeErr(err) {
			if j != len(t) {
				p.c.errorf("%s: invalid number", s)
				p.status = 1
			}
			return v
		}
	}
	p.c.errorf("%s: invalid number", s)
	p.status = 1
	return 0
}

// printfEscape reads the escape at s[i] (after its backslash) as bash's
// printf does in a format (bEsc: as %b does, where \0NNN is octal and
// \c ends all output). It returns the bytes, the index after, and
// whether \c was met.
func printfEscape(s string, i int, bEsc bool) ([]byte, int, bool) {
	if i >= len(s) {
		return []byte{'\\'}, i, false
	}
	ch := s[i]
	simple := map[byte]byte{'a': 7, 'b': 8, 'e': 27, 'E': 27, 'f': 12, 'n': 10, 'r': 13, 't': 9, 'v': 11, '\\': '\\'}
	if e, ok := simple[ch]; ok {
		return []byte{e}, i + 1, false
	}
	switch {
	case !bEsc && (ch == '"' || ch == '\'' || ch == '?'):
		return []byte{ch}, i + 1, false
	case ch == 'c' && bEsc:
		return nil, i + 1, true
	case ch >= '0' && ch <= '7':
		j, limit := i, i+3
		if bEsc && ch == '0' {
			j, limit = i+1, i+4
		}
		k := j
		for k < len(s) && k < limit && s[k] >= '0' && s[k] <= '7' {
			k++
		}
		v, _ := strconv.ParseUint("0"+s[j:k], 8, 16)
		return []byte{byte(v)}, k, false
	case ch == 'x':
		k := i + 1
		for k < len(s) && k < i+3 && isHex(s[k]) {
			k++
		}
		if k == i+1 {
			return []byte{'\\', 'x'}, k, false
		}
		v, _ := strconv.ParseUint(s[i+1:k], 16, 8)
		return []byte{byte(v)}, k, false
	case ch == 'u' || ch == 'U':
		n := 4
		if ch == 'U' {
			n = 8
		}
		k := i + 1
		for k < len(s) && k < i+1+n && isHex(s[k]) {
			k++
		}
		if k == i+1 {
			return []byte{'\\', ch}, k, false
		}
		v, _ := strconv.ParseUint(s[i+1:k], 16, 32)
		if v < 0x80 {
			return []byte{byte(v)}, k, false
		}
		// The C locale has no such character: bash writes the escape.
		if ch == 'u' {
			return fmt.Appendf(nil, "\\u%04X", v), k, false
		}
		return fmt.Appendf(nil, "\\U%08X", v), k, false
	}
	return []byte{'\\', ch}, i + 1, false
}

// shellQuote is bash's %q: backslashes before special characters, or
// $'...' for a string with control characters.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			var b strings.Builder
			b.WriteString("$'")
			for j := 0; j < len(s); j++ {
				switch c := s[j]; {
				case c == '\'' || c == '\\':
					b.WriteByte('\\')
					b.WriteByte(c)
				case c == '\n':
					b.WriteString(`\n`)
				case c == '\t':
					b.WriteString(`\t`)
				case c == '\r':
					b.WriteString(`\r`)
				case c == 27:
					b.WriteString(`\E`)
				case c < 0x20 || c == 0x7f:
					fmt.Fprintf(&b, "\\%03o", c)
				default:
					b.WriteByte(c)
				}
			}
			b.WriteByte('\'')
			return b.String()
		}
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(" \t\"'\\|&;()<>$`*?[]{}!#~=,^", c) >= 0 && !(c == '~' && i > 0) && !(c == '=' || c == ',') {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

func runPrintf(c *cmd, _ flags, args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		c.errorf("usage: printf [-v var] format [arguments]")
		return 2
	}
	format := args[0]
	p := &printfState{c: c, args: args[1:]}
	var out bytes.Buffer
	for {
		start := p.used
		stop, bad := p.once(format, &out)
		if bad {
			c.out.Write(out.Bytes())
			return 1
		}
		if stop || p.used >= len(p.args) || p.used == start {
			break
		}
	}
	c.out.Write(out.Bytes())
	return p.status
}

// once writes format once; stop is set by %b's \c, bad by an invalid
// conversion (bash stops there).
func (p *printfState) once(format string, out *bytes.Buffer) (stop, bad bool) {
	for i := 0; i < len(format); i++ {
		ch := format[i]
		if ch == '\\' {
			b, next, _ := printfEscape(format, i+1, false)
			out.Write(b)
			i = next - 1
			continue
		}
		if ch != '%' {
			out.WriteByte(ch)
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			out.WriteByte('%')
			i++
			continue
		}
		j := i + 1
		var spec strings.Builder
		spec.WriteByte('%')
		for j < len(format) && strings.IndexByte("-+ #0", format[j]) >= 0 {
			spec.WriteByte(format[j])
			j++
		}
		// Width and precision, either may be * (an argument).
		for part := 0; part < 2; part++ {
			if part == 1 {
				if j >= len(format) || format[j] != '.' {
					break
				}
				spec.WriteByte('.')
				j++
			}
			if j < len(format) && format[j] == '*' {
				a, _ := p.next()
				spec.WriteString(strconv.FormatInt(p.num(a), 10))
				j++
				continue
			}
			for j < len(format) && isDigit(format[j]) {
				spec.WriteByte(format[j])
				j++
			}
		}
		for j < len(format) && strings.IndexByte("hlLjzt", format[j]) >= 0 {
			j++ // length modifiers mean nothing to bash
		}
		if j >= len(format) {
			p.c.errorf("%s: missing format character", format[i:])
			return false, true
		}
		conv := format[j]
		i = j
		sp := spec.String()
		switch conv {
		case 's':
			a, _ := p.next()
			fmt.Fprintf(out, sp+"s", a)
		case 'b':
			a, _ := p.next()
			var b bytes.Buffer
			for k := 0; k < len(a); k++ {
				if a[k] != '\\' {
					b.WriteByte(a[k])
					continue
				}
				e, next, cstop := printfEscape(a, k+1, true)
				if cstop {
					fmt.Fprintf(out, sp+"s", b.String())
					return true, false
				}
				b.Write(e)
				k = next - 1
			}
			fmt.Fprintf(out, sp+"s", b.String())
		case 'q':
			a, _ := p.next()
			fmt.Fprintf(out, sp+"s", shellQuote(a))
		case 'c':
			a, _ := p.next()
			first := "\x00" // an empty argument gives its terminating NUL, as in C
			if a != "" {
				first = a[:1]
			}
			fmt.Fprintf(out, sp+"s", first)
		case 'd', 'i':
			a, _ := p.next()
			fmt.Fprintf(out, sp+"d", p.num(a))
		case 'u', 'o', 'x', 'X':
			a, _ := p.next()
			v := uint64(p.num(a))
			verb := string(conv)
			if conv == 'u' {
				verb = "d"
			}
			fmt.Fprintf(out, sp+verb, v)
		case 'f', 'F', 'e', 'E', 'g', 'G':
			a, _ := p.next()
			v := p.float(a)
			if !strings.Contains(sp, ".") {
				sp += ".6" // C's default precision (Go's %g is the shortest)
			}
			verb := string(conv)
			if conv == 'F' {
				verb = "f"
			}
			s := fmt.Sprintf(sp+verb, v)
			if math.IsInf(v, 0) || math.IsNaN(v) {
				s = strings.NewReplacer("+Inf", "inf", "-Inf", "-inf", "Inf", "inf", "NaN", "nan").Replace(s)
				if conv == 'F' || conv == 'E' || conv == 'G' {
					s = strings.ToUpper(s)
				}
			}
			out.WriteString(s)
		default:
			p.c.errorf("`%c': invalid format character", conv)
			return false, true
		}
	}
	return false, false
}

// printfVar is the VAR of printf -v VAR: a name, or an array element
// with a plain subscript.
var printfVar = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[A-Za-z0-9_]*\])?$`)

// printfV runs "printf -v VAR FORMAT [ARGUMENTS]" for the interpreter's
// call handler: a builtin cannot set the interpreter's variables, so
// the output is formatted here and the command becomes an eval of the
// assignment, with printf's status.
func printfV(ctx context.Context, args []string) []string {
	errw := io.Discard
	if hc, ok := handlerCtx(ctx); ok && hc.Stderr != nil {
		errw = hc.Stderr
	}
	if len(args) < 3 {
		fmt.Fprintln(errw, "printf: -v: option requires an argument")
		fmt.Fprintln(errw, "printf: usage: printf [-v var] format [arguments]")
		return []string{"eval", "(exit 2)"}
	}
	if !printfVar.MatchString(args[2]) {
		fmt.Fprintf(errw, "printf: `%s': not a valid identifier\n", args[2])
		return []string{"eval", "(exit 2)"}
	}
	var out bytes.Buffer
	c := &cmd{name: "printf", out: &out, err: errw}
	st := runPrintf(c, flags{}, args[3:])
	// Double quotes with \ " $ ` escaped hold any byte (the
	// interpreter reads 'a'\''b' in an assignment as a\'b).
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`")
	script := args[2] + `="` + esc.Replace(out.String()) + `"`
	if st != 0 {
		script += fmt.Sprintf("; (exit %d)", st)
	}
	return []string{"eval", script}
}
