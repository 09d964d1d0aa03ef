package shell

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

func init() {
	register(&builtin{name: "tr", summary: "translate, squeeze or delete characters (-c -d -s)", synopsis: "[OPTION]... STRING1 [STRING2]",
		run: runTr, options: []option{
			{short: 'c', long: "complement", key: "c", help: "use the complement of STRING1"},
			{short: 'C', key: "c", help: "use the complement of STRING1"},
			{short: 'd', long: "delete", help: "delete characters in STRING1, do not translate"},
			{short: 's', long: "squeeze-repeats", help: "replace each sequence of a repeated character in the last set given with one"},
			{short: 't', long: "truncate-set1", help: "first truncate STRING1 to the length of STRING2"},
		}})
}

// trClasses are POSIX's character classes in the C locale.
var trClasses = map[string]func(b byte) bool{
	"alnum":  func(b byte) bool { return isAlpha(b) || isDigit(b) },
	"alpha":  isAlpha,
	"blank":  func(b byte) bool { return b == ' ' || b == '\t' },
	"cntrl":  func(b byte) bool { return b < 32 || b == 127 },
	"digit":  isDigit,
	"graph":  func(b byte) bool { return b > 32 && b < 127 },
	"lower":  func(b byte) bool { return b >= 'a' && b <= 'z' },
	"print":  func(b byte) bool { return b >= 32 && b < 127 },
	"punct":  func(b byte) bool { return b > 32 && b < 127 && !isAlpha(b) && !isDigit(b) },
	"space":  func(b byte) bool { return b == ' ' || b >= '\t' && b <= '\r' },
	"upper":  func(b byte) bool { return b >= 'A' && b <= 'Z' },
	"xdigit": func(b byte) bool { return isDigit(b) || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' },
}

func isAlpha(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// trSet is an expanded STRING: its bytes in order, where each came from
// (the class name, for the upper/lower pairing), and a [c*] repeat to
// fill (at index fill, -1 for none).
type trSet struct {
	b     []byte
	class []string
	fill  int
}

// trUnescape reads one possibly backslash-escaped byte at s[i].
func trUnescape(s string, i int) (byte, int) {
	if s[i] != '\\' || i+1 == len(s) {
		return s[i], i + 1
	}
	c := s[i+1]
	if c >= '0' && c <= '7' {
		j := i + 1
		for j < len(s) && j < i+4 && s[j] >= '0' && s[j] <= '7' {
			j++
		}
		v, _ := strconv.ParseUint(s[i+1:j], 8, 16)
		if v > 255 { // GNU takes two digits when three overflow a byte
			v, _ = strconv.ParseUint(s[i+1:j-1], 8, 16)
			j--
		}
		return byte(v), j
	}
	m := map[byte]byte{'a': 7, 'b': 8, 'f': 12, 'n': 10, 'r': 13, 't': 9, 'v': 11}
	if e, ok := m[c]; ok {
		return e, i + 2
	}
	return c, i + 2
}

// parseTrSet expands a STRING as GNU tr does: escapes, ranges, [:class:],
// [=c=], [c*n] and [c*].
func parseTrSet(s string, second bool) (trSet, string) {
	set := trSet{fill: -1}
	add := func(b byte, class string) {
		set.b = append(set.b, b)
		set.class = append(set.class, class)
	}
	for i := 0; i < len(s); {
		if s[i] == '[' && i+1 < len(s) {
			if s[i+1] == ':' {
				if end := strings.Index(s[i+2:], ":]"); end >= 0 {
					name := s[i+2 : i+2+end]
					fn, ok := trClasses[name]
					if !ok {
						return set, fmt.Sprintf("invalid character class %s", quote(name))
					}
					if second && name != "upper" && name != "lower" {
						return set, "when translating, the only character classes that may appear in\nstring2 are 'upper' and 'lower'"
					}
					for b := 0; b < 256; b++ {
						if fn(byte(b)) {
							add(byte(b), name)
						}
					}
					i += end + 4
					continue
				}
			}
			if s[i+1] == '=' && i+4 < len(s) && s[i+3] == '=' && s[i+4] == ']' {
				add(s[i+2], "")
				i += 5
				continue
			}
			if i+2 < len(s) {
				c, j := trUnescape(s, i+1)
				if j+1 < len(s) && s[j] == '*' {
					if end := strings.IndexByte(s[j+1:], ']'); end >= 0 {
						ns := s[j+1 : j+1+end]
						if !second {
							return set, "the [c*] repeat construct may not appear in string1"
						}
						if strings.Trim(ns, "0") == "" { // [c*] or [c*0]: fill
							if set.fill >= 0 {
								return set, "only one [c*] repeat construct may appear in string2"
							}
							set.fill = len(set.b)
							add(c, "")
						} else {
							base := 10
							if ns[0] == '0' {
								base = 8
							}
							n, err := strconv.ParseUint(ns, base, 31)
							if err != nil {
								return set, fmt.Sprintf("invalid repeat count %s in [c*n] construct", quote(ns))
							}
							for range n {
								add(c, "")
							}
						}
						i = j + 2 + end
						continue
					}
				}
			}
		}
		c, j := trUnescape(s, i)
		if j+1 < len(s) && s[j] == '-' {
			hi, k := trUnescape(s, j+1)
			if hi < c {
				return set, fmt.Sprintf("range-endpoints of %s are in reverse collating sequence order", quote(s[i:k]))
			}
			for b := int(c); b <= int(hi); b++ {
				add(byte(b), "")
			}
			i = k
			continue
		}
		add(c, "")
		i = j
	}
	return set, ""
}

func runTr(c *cmd, f flags, ops []string) int {
	del, squeeze, comp := f.has("d"), f.has("s"), f.has("c")
	need := 2
	if del || squeeze && len(ops) < 2 {
		need = 1
	}
	if del && squeeze {
		need = 2
	}
	switch {
	case len(ops) == 0:
		return c.usage("missing operand")
	case len(ops) < need && del:
		c.errorf("missing operand after %s", quote(ops[len(ops)-1]))
		fmt.Fprintln(c.err, "Two strings must be given when both deleting and squeezing repeats.")
		fmt.Fprintf(c.err, "Try '%s --help' for more information.\n", c.name)
		return 1
	case len(ops) < need:
		c.errorf("missing operand after %s", quote(ops[len(ops)-1]))
		fmt.Fprintln(c.err, "Two strings must be given when translating.")
		fmt.Fprintf(c.err, "Try '%s --help' for more information.\n", c.name)
		return 1
	case len(ops) > need:
		c.errorf("extra operand %s", quote(ops[need]))
		if need == 1 && del {
			fmt.Fprintln(c.err, "Only one string may be given when deleting without squeezing repeats.")
		}
		fmt.Fprintf(c.err, "Try '%s --help' for more information.\n", c.name)
		return 1
	}
	s1, msg := parseTrSet(ops[0], false)
	if msg != "" {
		c.errorf("%s", msg)
		return 1
	}
	var in1 [256]bool
	for _, b := range s1.b {
		in1[b] = true
	}
	if comp {
		var cb []byte
		for b := 0; b < 256; b++ {
			if !in1[b] {
				cb = append(cb, byte(b))
			}
		}
		s1 = trSet{b: cb, class: make([]string, len(cb)), fill: -1}
		for b := range in1 {
			in1[b] = !in1[b]
		}
	}
	translate := !del && len(ops) == 2
	var s2 trSet
	var in2 [256]bool
	if len(ops) == 2 {
		if s2, msg = parseTrSet(ops[1], translate); msg != "" {
			c.errorf("%s", msg)
			return 1
		}
	}
	var table [256]byte
	for b := range table {
		table[b] = byte(b)
	}
	if translate {
		if len(s2.b) == 0 {
			c.errorf("when not truncating set1, string2 must be non-empty")
			return 1
		}
		if f.has("t") && len(s1.b) > len(s2.b) {
			s1.b, s1.class = s1.b[:len(s2.b)], s1.class[:len(s2.b)]
		}
		if s2.fill >= 0 {
			n := len(s1.b) - (len(s2.b) - 1)
			fill := make([]byte, max(n, 0))
			for i := range fill {
				fill[i] = s2.b[s2.fill]
			}
			s2.b = append(append(append([]byte(nil), s2.b[:s2.fill]...), fill...), s2.b[s2.fill+1:]...)
			s2.class = append(append(append([]string(nil), s2.class[:s2.fill]...), make([]string, len(fill))...), s2.class[s2.fill+1:]...)
		}
		for len(s2.b) < len(s1.b) {
			s2.b = append(s2.b, s2.b[len(s2.b)-1])
			s2.class = append(s2.class, "")
		}
		for i, cl := range s2.class {
			if cl == "" {
				continue
			}
			if i >= len(s1.class) || s1.class[i] != "upper" && s1.class[i] != "lower" {
				c.errorf("misaligned [:upper:] and/or [:lower:] construct")
				return 1
			}
		}
		for i, b := range s1.b {
			// A case class in both maps case to case, as GNU's does.
			if s2.class[i] != "" && s1.class[i] != s2.class[i] {
				if s2.class[i] == "upper" {
					table[b] = b - 'a' + 'A'
				} else {
					table[b] = b - 'A' + 'a'
				}
				continue
			}
			table[b] = s2.b[i]
		}
	}
	squeezeSet := &in1
	if len(ops) == 2 {
		for _, b := range s2.b {
			in2[b] = true
		}
		squeezeSet = &in2
	}
	br := bufio.NewReaderSize(c.in, 64<<10)
	w := bufio.NewWriterSize(c.out, 64<<10)
	last := -1
	buf := make([]byte, 64<<10)
	for !c.stopped() {
		n, rerr := br.Read(buf)
		for _, b := range buf[:n] {
			if del && in1[b] {
				continue
			}
			b = table[b]
			if squeeze && squeezeSet[b] && int(b) == last {
				continue
			}
			last = int(b)
			w.WriteByte(b)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			w.Flush()
			c.errorf("read error: %s", errText(rerr))
			return 1
		}
	}
	if err := w.Flush(); err != nil && c.sigpipe {
		return 141
	}
	return 0
}
