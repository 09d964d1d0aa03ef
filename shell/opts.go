package shell

// Option parsing for every builtin, as GNU's getopt_long does it: each
// builtin declares a table of its options, and parse turns its arguments
// into the options given (in order) and the operands, or a message in
// glibc's words. Short options group ("-nr"), a value follows its letter
// or is the next word ("-k2", "-k 2"), long options may be abbreviated to
// any unambiguous prefix ("--rev") and take "=VALUE" or the next word;
// options and operands mix unless the builtin stops at its first operand
// (POSIX's order, as xargs does); "--" ends the options and "-" is an
// operand. --help prints the table, unless the builtin defines it.

import (
	"fmt"
	"io"
	"strings"
)

// argKind says whether an option takes a value.
type argKind uint8

const (
	noArg   argKind = iota
	needArg         // "-k VALUE", "-kVALUE", "--key VALUE", "--key=VALUE"
	optArg          // "-iSUFFIX" (the rest of the word only), "--in-place[=SUFFIX]"
)

// An option is one row of a builtin's table.
type option struct {
	short byte   // the letter, or 0 for a long-only option
	long  string // the name after "--", or "" for a short-only option
	arg   argKind
	// key is the name the builtin looks the option up by: options with the
	// same key are one option (aliases), never ambiguous with each other.
	// It defaults to the letter, else the long name.
	key  string
	help string // one line for --help
}

func (o *option) name() string {
	if o.key != "" {
		return o.key
	}
	if o.short != 0 {
		return string(o.short)
	}
	return o.long
}

// parseStyle says how a builtin's words are read.
type parseStyle uint8

const (
	// permute: options anywhere before "--" (GNU's default).
	permute parseStyle = iota
	// numbersEnd: options end at the first operand (getopt's "+"), and a
	// word such as "-1" or "-.5" is an operand that ends the options too
	// (seq's negative numbers).
	numbersEnd
	// inOrder: options end at the first operand (getopt's "+", POSIX's
	// order), and "-0" is an option (xargs).
	inOrder
	// raw: no options at all; run gets the words as they are (dd's
	// operands, find's expression, chmod's modes such as -w).
	raw
)

// flags are the options a builtin was given, in order.
type flags struct{ got []flagVal }

type flagVal struct{ key, val string }

// has reports whether option key was given.
func (f flags) has(key string) bool {
	for _, g := range f.got {
		if g.key == key {
			return true
		}
	}
	return false
}

// last returns the value of the last key given, and whether it was given.
func (f flags) last(key string) (string, bool) {
	for i := len(f.got) - 1; i >= 0; i-- {
		if f.got[i].key == key {
			return f.got[i].val, true
		}
	}
	return "", false
}

// value is last without the second result: "" when not given.
func (f flags) value(key string) string {
	v, _ := f.last(key)
	return v
}

// all returns every value of key, in order.
func (f flags) all(key string) []string {
	var out []string
	for _, g := range f.got {
		if g.key == key {
			out = append(out, g.val)
		}
	}
	return out
}

// lastOf returns which of keys was given last ("" for none): for options
// that override each other (-n and -c of head).
func (f flags) lastOf(keys ...string) string {
	for i := len(f.got) - 1; i >= 0; i-- {
		for _, k := range keys {
			if f.got[i].key == k {
				return k
			}
		}
	}
	return ""
}

// errHelp is returned by parse for --help.
const errHelp = "\x00help"

// parse reads args by b's table. It returns the options, the operands and
// "" or a message for a bad option (errHelp for --help).
func (b *builtin) parse(args []string) (flags, []string, string) {
	var f flags
	var ops []string
	if b.style == raw {
		return f, args, ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return f, append(ops, args[i+1:]...), ""
		case len(a) < 2 || a[0] != '-':
			if b.style != permute {
				return f, append(ops, args[i:]...), ""
			}
			ops = append(ops, a)
		case b.style == numbersEnd && (a[1] == '.' || a[1] >= '0' && a[1] <= '9'):
			return f, append(ops, args[i:]...), ""
		case a[1] == '-':
			next, msg := b.parseLong(&f, args, i)
			if msg != "" {
				return f, nil, msg
			}
			i = next
		default:
			next, msg := b.parseShort(&f, args, i)
			if msg != "" {
				return f, nil, msg
			}
			i = next
		}
	}
	return f, ops, ""
}

// parseLong reads the long option args[i] (and its value) and returns the
// index of the last word it used.
func (b *builtin) parseLong(f *flags, args []string, i int) (int, string) {
	word := args[i][2:]
	name, val, hasVal := strings.Cut(word, "=")
	var found *option
	var matches []*option
	for k := range b.options {
		o := &b.options[k]
		if o.long == "" || !strings.HasPrefix(o.long, name) {
			continue
		}
		if o.long == name {
			found, matches = o, nil
			break
		}
		matches = append(matches, o)
	}
	if found == nil && len(matches) > 0 {
		found = matches[0]
		for _, m := range matches[1:] {
			if m.name() != found.name() || m.arg != found.arg {
				var b strings.Builder
				fmt.Fprintf(&b, "option '--%s' is ambiguous; possibilities:", word)
				for _, m := range matches {
					fmt.Fprintf(&b, " '--%s'", m.long)
				}
				return i, b.String()
			}
		}
	}
	if found == nil {
		if name == "help" {
			return i, errHelp
		}
		return i, fmt.Sprintf("unrecognized option '--%s'", word)
	}
	switch found.arg {
	case noArg:
		if hasVal {
			return i, fmt.Sprintf("option '--%s' doesn't allow an argument", found.long)
		}
	case needArg:
		if !hasVal {
			if i+1 >= len(args) {
				return i, fmt.Sprintf("option '--%s' requires an argument", found.long)
			}
			i++
			val = args[i]
		}
	}
	f.got = append(f.got, flagVal{found.name(), val})
	return i, ""
}

// parseShort reads the group of short options args[i] (and a value) and
// returns the index of the last word it used.
func (b *builtin) parseShort(f *flags, args []string, i int) (int, string) {
	a := args[i]
	for j := 1; j < len(a); j++ {
		o := b.shortOption(a[j])
		if o == nil {
			return i, fmt.Sprintf("invalid option -- '%c'", a[j])
		}
		switch o.arg {
		case noArg:
			f.got = append(f.got, flagVal{o.name(), ""})
			continue
		case optArg:
			f.got = append(f.got, flagVal{o.name(), a[j+1:]})
			return i, ""
		}
		v := a[j+1:]
		if v == "" {
			if i+1 >= len(args) {
				return i, fmt.Sprintf("option requires an argument -- '%c'", a[j])
			}
			i++
			v = args[i]
		}
		f.got = append(f.got, flagVal{o.name(), v})
		return i, ""
	}
	return i, ""
}

func (b *builtin) shortOption(c byte) *option {
	for k := range b.options {
		if b.options[k].short == c {
			return &b.options[k]
		}
	}
	return nil
}

// printHelp writes b's usage and option table, as --help shows it.
func (b *builtin) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s %s\n%s.\n", b.name, b.synopsis, upperFirst(b.summary))
	if len(b.options) > 0 {
		fmt.Fprintln(w)
	}
	for _, o := range b.options {
		var names string
		switch {
		case o.short != 0 && o.long != "":
			names = fmt.Sprintf("-%c, --%s", o.short, o.long)
		case o.short != 0:
			names = fmt.Sprintf("-%c", o.short)
		default:
			names = "    --" + o.long
		}
		switch {
		case o.arg == needArg && o.long != "":
			names += "=VALUE"
		case o.arg == needArg:
			names += " VALUE"
		case o.arg == optArg && o.long != "":
			names += "[=VALUE]"
		}
		if len(names) < 24 {
			fmt.Fprintf(w, "  %-24s%s\n", names, o.help)
		} else {
			fmt.Fprintf(w, "  %s\n  %24s%s\n", names, "", o.help)
		}
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
