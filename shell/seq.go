package shell

import (
	"bufio"
	"fmt"
	"math"
	"strconv"
	"strings"
)

func init() {
	register(&builtin{name: "seq", summary: "print a sequence of numbers (-s -w -f)",
		synopsis: "[OPTION]... [FIRST [INCREMENT]] LAST", style: numbersEnd, minOps: 1, maxOps: 3,
		options: []option{
			{short: 'f', long: "format", arg: needArg, help: "use printf style floating-point FORMAT"},
			{short: 's', long: "separator", arg: needArg, help: "use STRING to separate numbers (default: \\n)"},
			{short: 'w', long: "equal-width", help: "equalize width by padding with leading zeroes"},
		}, run: runSeq})
}

// seqArg is one operand of seq: its value and the digits after its
// point, which set the output's precision as GNU's seq does.
type seqArg struct {
	v       float64
	i       int64
	isInt   bool
	prec    int
	literal string
}

func parseSeqArg(s string) (seqArg, bool) {
	a := seqArg{literal: s}
	t := strings.TrimLeft(s, " \t")
	if i, err := strconv.ParseInt(strings.TrimPrefix(t, "+"), 10, 64); err == nil {
		a.i, a.v, a.isInt = i, float64(i), true
		return a, true
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil && !isRangeErr(err) || strings.HasPrefix(strings.ToLower(strings.TrimLeft(t, "+-")), "0x") {
		return a, false
	}
	a.v = v
	if math.IsNaN(v) {
		return a, false
	}
	mant, exp := t, 0
	if k := strings.IndexAny(t, "eE"); k >= 0 {
		mant = t[:k]
		exp, _ = strconv.Atoi(t[k+1:])
	}
	if dot := strings.IndexByte(mant, '.'); dot >= 0 {
		a.prec = len(mant) - dot - 1
	}
	a.prec = max(a.prec-exp, 0)
	return a, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func runSeq(c *cmd, f flags, ops []string) int {
	args := make([]seqArg, len(ops))
	for i, op := range ops {
		a, ok := parseSeqArg(op)
		if !ok {
			return c.usage("invalid floating point argument: %s", quote(op))
		}
		args[i] = a
	}
	first, step, last := seqArg{v: 1, i: 1, isInt: true}, seqArg{v: 1, i: 1, isInt: true}, args[len(args)-1]
	switch len(args) {
	case 2:
		first = args[0]
	case 3:
		first, step = args[0], args[1]
	}
	if step.v == 0 {
		return c.usage("invalid Zero increment value: %s", quote(step.literal))
	}
	sep := "\n"
	if s, ok := f.last("s"); ok {
		sep = s
	}
	format, hasFormat := f.last("f")
	if hasFormat && f.has("w") {
		return c.usage("format string may not be specified when printing equal width strings")
	}
	if hasFormat {
		var msg string
		if format, msg = checkSeqFormat(format); msg != "" {
			c.errorf("%s", msg)
			return 1
		}
	}
	w := bufio.NewWriterSize(c.out, 64<<10)
	defer w.Flush()
	n := 0
	emit := func(s string) bool {
		if n > 0 {
			w.WriteString(sep)
		}
		n++
		w.WriteString(s)
		// A failed write or a stop ends the sequence (which may have no
		// end: a step below LAST's precision never reaches it).
		if n%1024 == 0 && (w.Flush() != nil || c.stopped()) {
			return false
		}
		return true
	}
	// stopStatus is the status of a sequence cut short.
	stopStatus := func() int {
		switch {
		case c.ctx.Err() != nil:
			return statusInterrupted
		case c.sigpipe:
			return 141
		}
		c.errorf("write error")
		return 1
	}
	allInt := first.isInt && step.isInt && last.isInt && !hasFormat
	if allInt {
		width := 0
		if f.has("w") {
			width = max(len(strconv.FormatInt(first.i, 10)), len(strconv.FormatInt(last.i, 10)))
		}
		for x := first.i; step.i > 0 && x <= last.i || step.i < 0 && x >= last.i; x += step.i {
			s := strconv.FormatInt(x, 10)
			if width > 0 {
				s = zeroPad(s, width)
			}
			if !emit(s) {
				return stopStatus()
			}
			if step.i > 0 && x > math.MaxInt64-step.i || step.i < 0 && x < math.MinInt64-step.i {
				break
			}
		}
	} else {
		prec := max(first.prec, step.prec)
		str := func(x float64) string {
			if hasFormat {
				return fmt.Sprintf(format, x)
			}
			return strconv.FormatFloat(x, 'f', prec, 64)
		}
		width := 0
		if f.has("w") {
			width = max(len(str(first.v)), len(strconv.FormatFloat(last.v, 'f', max(prec, last.prec), 64)))
		}
		// Each value is FIRST + i*INCREMENT, as GNU computes it, so that
		// errors do not add up.
		prev := math.NaN()
		for i := int64(0); ; i++ {
			x := first.v + float64(i)*step.v
			if i > 0 {
				prev = first.v + float64(i-1)*step.v
			}
			s := str(x)
			if step.v > 0 && x > last.v || step.v < 0 && x < last.v {
				// A value past LAST only by rounding (0.1 0.1 0.3) is
				// printed when what it prints reads back as LAST, as
				// GNU's seq does.
				v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
				if err != nil || v != last.v || v == prev {
					break
				}
				if width > 0 {
					s = zeroPad(s, width)
				}
				emit(s)
				break
			}
			if width > 0 {
				s = zeroPad(s, width)
			}
			if !emit(s) {
				return stopStatus()
			}
		}
	}
	if n > 0 {
		w.WriteString("\n")
	}
	if w.Flush() != nil && c.sigpipe {
		return 141
	}
	return 0
}

// zeroPad pads s with zeros after its sign to width.
func zeroPad(s string, width int) string {
	if len(s) >= width {
		return s
	}
	if strings.HasPrefix(s, "-") {
		return "-" + strings.Repeat("0", width-len(s)) + s[1:]
	}
	return strings.Repeat("0", width-len(s)) + s
}

// checkSeqFormat accepts a format with exactly one floating-point
// directive (e f g E F G a A), as GNU's seq requires, and returns it for
// Go's fmt: a %g without a precision gets C's default of 6 (Go's %g
// prints the shortest exact form).
func checkSeqFormat(format string) (string, string) {
	n := 0
	out := format
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			i++
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("-+ #0'123456789.", format[j]) >= 0 {
			j++
		}
		if j == len(format) || strings.IndexByte("eEfFgGaA", format[j]) < 0 {
			if j == len(format) {
				return "", fmt.Sprintf("format %s ends in %%", quote(format))
			}
			return "", fmt.Sprintf("format %s has unknown %%%c directive", quote(format), format[j])
		}
		if (format[j] == 'g' || format[j] == 'G') && !strings.Contains(format[i:j], ".") {
			out = format[:j] + ".6" + format[j:]
		}
		n++
		i = j
	}
	switch {
	case n == 0:
		return "", fmt.Sprintf("format %s has no %% directive", quote(format))
	case n > 1:
		return "", fmt.Sprintf("format %s has too many %% directives", quote(format))
	}
	return out, ""
}
