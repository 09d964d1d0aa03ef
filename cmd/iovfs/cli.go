package main

// The conventions every subcommand follows:
//   - -h and --help print the full usage (synopsis, options, examples) on
//     stdout and exit 0;
//   - a usage error prints "iovfs CMD: what is wrong" and "Try 'iovfs CMD
//     --help'." on stderr and exits 2;
//   - a failure prints "iovfs CMD: ..." on stderr and exits 1;
//   - a driver's warning is printed as "iovfs CMD: warning: ...".

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/iovfs/iovfs/notice"
)

// A cli is one run of a subcommand: its name and where it writes.
type cli struct {
	name           string
	stdout, stderr io.Writer
}

// usageError reports a usage error and returns exit status 2.
func (c *cli) usageError(format string, a ...any) int {
	fmt.Fprintf(c.stderr, "%s: %s\nTry '%s --help'.\n", c.prefix(), oneLine(fmt.Sprintf(format, a...)), c.prefix())
	return 2
}

// fail reports a failure and returns exit status 1.
func (c *cli) fail(format string, a ...any) int {
	c.errorf(format, a...)
	return 1
}

// errorf prints "iovfs CMD: msg" on stderr.
func (c *cli) errorf(format string, a ...any) {
	fmt.Fprintf(c.stderr, "%s: %s\n", c.prefix(), oneLine(fmt.Sprintf(format, a...)))
}

// warnf prints "iovfs CMD: warning: msg" on stderr.
func (c *cli) warnf(format string, a ...any) {
	fmt.Fprintf(c.stderr, "%s: warning: %s\n", c.prefix(), oneLine(fmt.Sprintf(format, a...)))
}

// prefix is "iovfs CMD", or "iovfs" outside a command.
func (c *cli) prefix() string {
	if c.name == "" {
		return "iovfs"
	}
	return "iovfs " + c.name
}

// oneLine keeps a message on one line: an error wrapping several lines
// (a wasm stack, say) is printed by its caller, not here.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "; ")
}

// isHelp reports whether a is a request for help.
func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" }

// wantsHelp reports whether args ask for help before any operand ends the
// options ("--" or, with stopAtOperand, the first non-option).
func wantsHelp(args []string, stopAtOperand bool) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelp(a) {
			return true
		}
		if stopAtOperand && !strings.HasPrefix(a, "-") {
			return false
		}
	}
	return false
}

// newFlagSet returns a flag set that reports nothing itself: parseFlags
// turns its errors into usage errors.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("iovfs "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// flagError rewrites an error of package flag in the words of the usage
// error convention: the option as the user typed it (args are what was
// parsed), and what is wrong with it.
func flagError(err error, args []string) string {
	s := err.Error()
	typed := func(name string) string {
		name = strings.TrimLeft(name, "-")
		for _, a := range args {
			if a == "--" {
				break
			}
			if n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); n == name && strings.HasPrefix(a, "-") {
				a, _, _ = strings.Cut(a, "=")
				return a
			}
		}
		return "--" + name
	}
	switch {
	case strings.HasPrefix(s, "flag provided but not defined: "):
		return "unknown option " + typed(strings.TrimPrefix(s, "flag provided but not defined: "))
	case strings.HasPrefix(s, "flag needs an argument: "):
		return "option " + typed(strings.TrimPrefix(s, "flag needs an argument: ")) + " needs an argument"
	case strings.HasPrefix(s, "invalid value "), strings.HasPrefix(s, "invalid boolean value "):
		// invalid value "x" for flag -loops: parse error
		rest := strings.TrimPrefix(strings.TrimPrefix(s, "invalid boolean value "), "invalid value ")
		val, tail, _ := strings.Cut(rest, " for flag ")
		name, why, _ := strings.Cut(tail, ": ")
		var ne *strconv.NumError
		if errors.As(err, &ne) {
			why = "not a number"
			if errors.Is(ne.Err, strconv.ErrRange) {
				why = "out of range"
			}
		} else if why == "parse error" {
			why = "not a number"
		} else if why == "value out of range" {
			why = "out of range"
		}
		return fmt.Sprintf("invalid value %s for %s: %s", val, typed(name), why)
	case strings.HasPrefix(s, "bad flag syntax: "):
		return "bad option syntax: " + strings.TrimPrefix(s, "bad flag syntax: ")
	}
	return s
}

// positive checks an integer option the user set: zero and negative
// counts mean nothing.
func positive(name string, v int) error {
	if v <= 0 {
		return fmt.Errorf("--%s %d: must be at least 1", name, v)
	}
	return nil
}

// noticeSink collects the notices drivers post during one command and
// prints them as warnings, naming what the user gave instead of the
// devices the drivers saw. Its methods accept a nil sink. mu protects the
// fields below.
type noticeSink struct {
	c     *cli
	mu    sync.Mutex
	names map[string]string // driver source -> what the user gave
	held  []notice.Notice   // while holding
	hold  bool
}

// sink prints the notices of the command running (run sets it).
var sink *noticeSink

// watchNotices installs a handler printing the drivers' notices as
// warnings of c, until the returned function is called.
func watchNotices(c *cli) (*noticeSink, func()) {
	s := &noticeSink{c: c, names: map[string]string{}}
	old := notice.SetHandler(s.post)
	return s, func() { notice.SetHandler(old) }
}

// name makes notices about source name user instead.
func (s *noticeSink) name(source, user string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.names[source] = user
	s.mu.Unlock()
}

// begin starts an attempt whose notices are held back until end: the
// notices of a mount attempt that is then made another way are dropped,
// only the attempt that stands is heard from.
func (s *noticeSink) begin() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.hold, s.held = true, nil
	s.mu.Unlock()
}

// endExcept prints the notices held back since begin if keep, else drops
// them; it drops those whose message contains one of drop too: what the
// caller says in its own terms.
func (s *noticeSink) endExcept(keep bool, drop ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	held := s.held
	s.hold, s.held = false, nil
	s.mu.Unlock()
	if !keep {
		return
	}
next:
	for _, n := range held {
		for _, d := range drop {
			if strings.Contains(n.Msg, d) {
				continue next
			}
		}
		s.print(n)
	}
}

func (s *noticeSink) post(n notice.Notice) {
	s.mu.Lock()
	if s.hold {
		s.held = append(s.held, n)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.print(n)
}

func (s *noticeSink) print(n notice.Notice) {
	s.mu.Lock()
	who, ok := s.names[n.Source]
	s.mu.Unlock()
	msg := strings.TrimPrefix(n.Msg, "warning: ")
	switch {
	case ok:
		s.c.warnf("%s: %s", who, msg)
	default:
		// Not a device the command made: the driver's name, never the
		// device's.
		s.c.warnf("%s: %s", n.Driver, loopDevName.ReplaceAllString(msg, "the image"))
	}
}
