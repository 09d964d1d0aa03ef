package bench

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// An Experiment is a set of named variants of one operation, compared in the
// same run against a baseline variant.
type Experiment struct {
	// Name is the command-line name ("zero") and, title-cased, the
	// benchmark name in benchstat output ("BenchmarkZero").
	Name string
	// Summary is one line for help output.
	Summary string
	// Baseline names the variant every other variant is divided by.
	Baseline string
	// Defaults holds the default Loops, Ops and Size.
	Defaults Params
	// Unit names one operation in plural, as in "100000 reads".
	Unit string
	// Describe returns one line saying what a round does with p, such as
	// "100000 reads of 1 B from /dev/zero". Optional.
	Describe func(p Params) string
	// Flags are experiment-specific string flags; their values reach
	// Setup and the variants in Params.Extra, defaults filled in.
	Flags []Flag
	// Variants, in display order.
	Variants []Variant
	// Setup, if not nil, runs once before any variant's Setup and prepares
	// what the variants share (a file-system image, say). Its env is
	// passed to each Variant.Setup; cleanup, if not nil, runs after the
	// last variant has closed.
	Setup func(p Params) (env any, cleanup func() error, err error)
	// Reference lists published figures to print beside ours.
	Reference []Reference
	// ReferenceNote is printed above the reference figures: where they
	// come from and how to read them.
	ReferenceNote string
	// Report, if not nil, writes an extra section after the summary, such
	// as a table in the shape of the seed's.
	Report func(w io.Writer, r *Result)
	// Warm, if true, has each variant do a quarter of its operations
	// untimed before each timed round, after the heap is settled, so that
	// a variant is measured in the steady state of its own code and data
	// rather than in what the variant before it (a system call loop, say)
	// left in the caches and branch predictors.
	Warm bool
	// Check, if not nil, checks the experiment's flags (extra holds every
	// Flag, defaults filled in) before anything runs, so that a bad value
	// is a usage error rather than a failure minutes in.
	Check func(extra map[string]string) error
	// Runner, if not nil, replaces the harness's rounds for an experiment
	// whose measurements are not one Op per variant (the matrix): Run
	// resolves the parameters and calls it with the result to fill in.
	// Setup and the variants' Setup are not called.
	Runner func(p Params, o Options, res *Result) error
}

// A Variant is one way of doing the experiment's operation.
type Variant struct {
	Name string
	// Doc is one line for help output.
	Doc string
	// Setup prepares the variant for one run and returns its Op. It may
	// return an error wrapping ErrSkip to leave the variant out with a
	// note (a variant that needs root, say).
	Setup func(p Params, env any) (Op, error)
}

// An Op does the measured work.
type Op struct {
	// Run does n operations. It is timed as a whole, so it must do
	// nothing else: set-up belongs in Variant.Setup.
	Run func(n int) error
	// Close releases what Setup made; may be nil.
	Close func() error
}

// A Flag is an experiment-specific command-line flag.
type Flag struct {
	Name, Default, Usage string
}

// Reference is a published figure to print beside ours.
type Reference struct {
	// Label says what was measured, as its source says it.
	Label string
	// Variant names our variant that corresponds to it.
	Variant string
	// NsPerOp is the figure, in nanoseconds per operation.
	NsPerOp float64
}

// Params are the parameters of one run.
type Params struct {
	// Loops is the number of measured rounds (a warm-up round comes on
	// top of them).
	Loops int
	// Ops is the number of operations each variant does per round.
	Ops int
	// Size is the bytes per operation.
	Size int
	// Turns, if more than 1, splits each measured round: the variants
	// take turns of Ops/Turns operations each, in the round's order,
	// until each has done Ops, and a variant's ratio to another in that
	// round is the median of the turn-by-turn ratios. The pairs are then
	// timed a turn apart rather than a whole variant's round apart, so
	// contention that changes within a round (the memory bandwidth a
	// shared machine leaves) meets both alike. 0 or 1: one turn.
	Turns int
	// Variants to run, by name; empty means all.
	Variants []string
	// Extra holds the experiment's own flags (Experiment.Flags).
	Extra map[string]string
}

// ErrSkip, wrapped by a Variant.Setup error, leaves that variant out of a
// run with the error as the note.
var ErrSkip = errors.New("skipped")

// Skip returns an error that makes the harness skip a variant for reason.
func Skip(reason string) error {
	return fmt.Errorf("%w: %s", ErrSkip, reason)
}

// CheckFlags checks the experiment's flags, with extra overriding their
// defaults: those Check looks at, and that each names a flag of e.
func (e *Experiment) CheckFlags(extra map[string]string) error {
	full := make(map[string]string, len(e.Flags))
	for _, f := range e.Flags {
		full[f.Name] = f.Default
	}
	for k, v := range extra {
		if _, ok := full[k]; !ok {
			return fmt.Errorf("%s has no flag --%s", e.Name, k)
		}
		full[k] = v
	}
	if e.Check == nil {
		return nil
	}
	return e.Check(full)
}

// Variant returns the named variant, or nil.
func (e *Experiment) Variant(name string) *Variant {
	for i := range e.Variants {
		if e.Variants[i].Name == name {
			return &e.Variants[i]
		}
	}
	return nil
}

// VariantNames returns the variants' names in display order.
func (e *Experiment) VariantNames() []string {
	var s []string
	for _, v := range e.Variants {
		s = append(s, v.Name)
	}
	return s
}

// BenchName is the experiment's name in benchstat output: "Zero" for "zero".
func (e *Experiment) BenchName() string {
	var b strings.Builder
	up := true
	for _, r := range e.Name {
		switch {
		case r == '-' || r == '_':
			up = true
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// resolve fills p's unset fields from the experiment's defaults and checks
// them; it returns the variants to run, in display order.
func (e *Experiment) resolve(p Params) (Params, []*Variant, error) {
	if p.Loops == 0 {
		p.Loops = e.Defaults.Loops
	}
	if p.Ops == 0 {
		p.Ops = e.Defaults.Ops
	}
	if p.Size == 0 {
		p.Size = e.Defaults.Size
	}
	if p.Turns == 0 { // the default, at most one turn per operation
		p.Turns = max(min(e.Defaults.Turns, p.Ops), 1)
	}
	if p.Loops < 1 || p.Ops < 1 || p.Size < 1 {
		return p, nil, fmt.Errorf("%s: loops, ops and size must be at least 1 (have %d, %d, %d)", e.Name, p.Loops, p.Ops, p.Size)
	}
	if p.Turns < 1 || p.Turns > p.Ops {
		return p, nil, fmt.Errorf("%s: turns must be from 1 to the operations per round, %d (have %d)", e.Name, p.Ops, p.Turns)
	}
	extra := make(map[string]string, len(e.Flags))
	for _, f := range e.Flags {
		extra[f.Name] = f.Default
	}
	for k, v := range p.Extra {
		extra[k] = v
	}
	p.Extra = extra

	var vs []*Variant
	if len(p.Variants) == 0 {
		for i := range e.Variants {
			vs = append(vs, &e.Variants[i])
		}
		return p, vs, nil
	}
	for _, name := range p.Variants {
		if e.Variant(name) == nil {
			return p, nil, fmt.Errorf("%s: no variant %q (have %s)", e.Name, name, strings.Join(e.VariantNames(), ", "))
		}
	}
	for i := range e.Variants {
		if slices.Contains(p.Variants, e.Variants[i].Name) {
			vs = append(vs, &e.Variants[i])
		}
	}
	return p, vs, nil
}
