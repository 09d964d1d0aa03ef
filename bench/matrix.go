package bench

// The matrix experiment: for every driver, segment count and segment
// size, one Preadv over N segments against N Preads of the same byte
// ranges (and Pwritev against Pwrites where the driver is writable), in
// the same process, paired round by round. It answers for the whole stack
// the question the seeds asked of one driver each: does the vectored call
// ever cost more than the loop of scalar calls it replaces?
//
// Each cell is a pair of variants measured back to back, in an order that
// alternates; every round visits all cells, starting one cell later each
// round. A cell's operation count is calibrated once so that each
// measurement takes about --cell-time; the ratio is the median of the
// per-round ratios vectored/scalar with its bootstrap CI, as for the other
// experiments.

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// matrixOps are the operation kinds, in display order: the vectored call
// is compared with a loop of the scalar one.
var matrixOps = []struct{ name, vectored, scalar string }{
	{"read", "preadv", "pread"},
	{"write", "pwritev", "pwrite"},
}

var matrixExperiment = &Experiment{
	Name: "matrix",
	Check: func(extra map[string]string) error {
		_, _, _, err := matrixPlan(Params{Extra: extra})
		return err
	},
	Summary:  "vectored against scalar on every driver: one preadv (pwritev) of N segments against N preads (pwrites) of the same ranges",
	Baseline: "pread",
	Defaults: Params{Loops: 10, Ops: 1, Size: 1},
	Unit:     "calls",
	Describe: func(p Params) string {
		return fmt.Sprintf("every cell (driver x segments x size, up to %d MiB per call) runs its vectored call and its loop of scalar calls, ~%s each, back to back, at offsets walking the first %s of a 64 MiB file",
			matrixFileSize>>20, p.Extra["cell-time"], p.Extra["window"])
	},
	Flags: []Flag{
		{Name: "drivers", Default: strings.Join(MatrixDriverNames(), ","), Usage: "matrix drivers to measure, comma-separated"},
		{Name: "segments", Default: "1,2,8,16,64,1024", Usage: "matrix segment counts, comma-separated"},
		{Name: "sizes", Default: "1,512,4K,64K", Usage: "matrix segment sizes in bytes (K, M suffixes), comma-separated"},
		{Name: "cell-time", Default: "3ms", Usage: "matrix: time each variant of a cell runs per round"},
		{Name: "confirm", Default: "10", Usage: "matrix: cells slower vectored beyond noise are measured again in this many fresh rounds, whose ratio then stands for the cell (0: no second pass)"},
		{Name: "window", Default: "1M", Usage: "matrix: the calls of a cell walk the first WINDOW bytes of the file (or one call's worth if more), so small cells measure the call paths from cache rather than memory bandwidth; 64M streams"},
	},
	Variants: []Variant{
		{Name: "preadv", Doc: "one Preadv over N segments"},
		{Name: "pread", Doc: "N Preads of the same byte ranges"},
		{Name: "pwritev", Doc: "one Pwritev over N segments (writable drivers)"},
		{Name: "pwrite", Doc: "N Pwrites of the same byte ranges"},
	},
	Runner: runMatrix,
}

// Matrix is the result of the matrix experiment.
type Matrix struct {
	// Drivers, Segments and Sizes that were asked for, in display order.
	Drivers  []string
	Segments []int
	Sizes    []int
	// Cells that ran, by driver, then operation, segments and size.
	Cells []*MatrixCell
	// CellTime is the calibration target per variant per round.
	CellTime time.Duration
	// Window is the part of the file the calls of a cell walk.
	Window int
	// Confirm is the number of rounds of the second pass, which measures
	// again the cells whose first-pass CI lies above 1.0.
	Confirm int
}

// MatrixCell is one cell: a driver, an operation and a vector shape.
type MatrixCell struct {
	Driver   string
	Op       string // "read" or "write"
	Segments int
	Size     int
	// Native is true when the driver has its own vectored method.
	Native bool
	// Ops is the number of vectored calls (and of scalar loops) per round.
	Ops int
	// Vectored and Scalar are the two variants; their NsPerOp is per
	// vectored call and per loop of Segments scalar calls.
	Vectored, Scalar *VariantResult
	// Ratio is Vectored over Scalar, paired by round.
	Ratio Ratio
	// FirstPass, if not nil, is the ratio of the first pass, which was
	// above 1.0 beyond noise; Ratio, Vectored and Scalar then come from
	// the second pass's fresh rounds.
	FirstPass *Ratio

	t      *matrixTarget
	buf    []byte
	vec    [][]byte
	off    int64
	window int64 // calls walk [0, window)
}

// Total returns the bytes one call moves.
func (c *MatrixCell) Total() int { return c.Segments * c.Size }

// Name is the cell's name, as in benchmark output: "tmpfs/read/16x4KiB".
func (c *MatrixCell) Name() string {
	return fmt.Sprintf("%s/%s/%dx%s", c.Driver, c.Op, c.Segments, fmtSize(c.Size))
}

// fmtSize writes 1B, 512B, 4KiB, 64KiB.
func fmtSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// parseList splits a comma-separated flag value and converts each item.
func parseList[T any](flag, s string, conv func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := conv(f)
		if err != nil {
			return nil, fmt.Errorf("--%s: %q: %v", flag, f, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s: empty list", flag)
	}
	return out, nil
}

// matrixPlan reads the experiment's flags.
func matrixPlan(p Params) (m *Matrix, drivers []*MatrixDriver, ops []int, err error) {
	m = &Matrix{}
	names, err := parseList("drivers", p.Extra["drivers"], func(s string) (string, error) {
		for i := range matrixDrivers {
			if matrixDrivers[i].Name == s {
				return s, nil
			}
		}
		return "", fmt.Errorf("no such driver (have %s)", strings.Join(MatrixDriverNames(), ", "))
	})
	if err != nil {
		return nil, nil, nil, err
	}
	for i := range matrixDrivers {
		if slices.Contains(names, matrixDrivers[i].Name) {
			drivers = append(drivers, &matrixDrivers[i])
			m.Drivers = append(m.Drivers, matrixDrivers[i].Name)
		}
	}
	if m.Segments, err = parseList("segments", p.Extra["segments"], func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err == nil && (n < 1 || n > 1024) {
			err = fmt.Errorf("want 1 to 1024 (UIO_MAXIOV)")
		}
		return n, err
	}); err != nil {
		return nil, nil, nil, err
	}
	if m.Sizes, err = parseList("sizes", p.Extra["sizes"], func(s string) (int, error) {
		n, err := parseSize(s)
		if err == nil && n > matrixFileSize {
			err = fmt.Errorf("want at most %d", matrixFileSize)
		}
		return int(n), err
	}); err != nil {
		return nil, nil, nil, err
	}
	if m.CellTime, err = time.ParseDuration(p.Extra["cell-time"]); err != nil || m.CellTime <= 0 {
		return nil, nil, nil, fmt.Errorf("--cell-time %q: want a duration such as 3ms", p.Extra["cell-time"])
	}
	if m.Confirm, err = strconv.Atoi(p.Extra["confirm"]); err != nil || m.Confirm < 0 {
		return nil, nil, nil, fmt.Errorf("--confirm %q: want a number of rounds, 0 or more", p.Extra["confirm"])
	}
	if w, err := parseSize(p.Extra["window"]); err != nil || w > matrixFileSize {
		return nil, nil, nil, fmt.Errorf("--window %q: want a size up to 64M", p.Extra["window"])
	} else {
		m.Window = int(w)
	}
	for i, o := range matrixOps {
		if len(p.Variants) == 0 || slices.Contains(p.Variants, o.vectored) || slices.Contains(p.Variants, o.scalar) {
			ops = append(ops, i)
		}
	}
	return m, drivers, ops, nil
}

// matrixCells opens the drivers and lays out the cells; drivers that
// cannot run go to res.Skipped. The targets must be closed by the caller
// (closeTargets), even on error.
func matrixCells(m *Matrix, drivers []*MatrixDriver, ops []int, env *matrixEnv, res *Result) ([]*matrixTarget, error) {
	var targets []*matrixTarget
	for _, d := range drivers {
		t, err := d.Open(env)
		if err != nil {
			if errors.Is(err, ErrSkip) {
				res.Skipped = append(res.Skipped, Skipped{d.Name, err.Error()})
				continue
			}
			return targets, fmt.Errorf("driver %s: %w", d.Name, err)
		}
		targets = append(targets, t)
		for _, oi := range ops {
			if oi == 1 && t.pwritev == nil {
				continue
			}
			for _, segs := range m.Segments {
				for _, size := range m.Sizes {
					if segs*size > matrixFileSize {
						continue
					}
					c := &MatrixCell{Driver: d.Name, Op: matrixOps[oi].name, Segments: segs, Size: size, Native: t.native, t: t,
						window: int64(max(m.Window, segs*size))}
					c.buf = make([]byte, segs*size)
					if c.Op == "write" {
						copy(c.buf, matrixData(len(c.buf)))
					} else {
						for i := range c.buf { // fault the pages in before calibrating
							c.buf[i] = 0xa5
						}
					}
					c.vec = make([][]byte, segs)
					for i := range c.vec {
						c.vec[i] = c.buf[i*size : (i+1)*size : (i+1)*size]
					}
					m.Cells = append(m.Cells, c)
				}
			}
		}
	}
	return targets, nil
}

func closeTargets(ts []*matrixTarget) error {
	var first error
	for _, t := range ts {
		if err := t.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// want is the count one call of the cell must return.
func (c *MatrixCell) want() int {
	if c.Op == "read" && c.t.eof {
		return 0
	}
	return c.Total()
}

// next returns the offset of the next call and advances it: calls walk
// the window from the file's start, wrapping before they would pass its
// end.
func (c *MatrixCell) next() int64 {
	off := c.off
	c.off += int64(c.Total())
	if c.off+int64(c.Total()) > c.window {
		c.off = 0
	}
	return off
}

// vectoredRun returns the Run of the cell's vectored variant.
func (c *MatrixCell) vectoredRun() func(int) error {
	call := c.t.preadv
	if c.Op == "write" {
		call = c.t.pwritev
	}
	want := c.want()
	return func(n int) error {
		for range n {
			if m, err := call(c.vec, c.next()); m != want {
				return c.short("vectored", m, want, err)
			}
		}
		return nil
	}
}

// scalarRun returns the Run of the cell's scalar variant: one call per
// segment, over the same byte ranges as the vectored call.
func (c *MatrixCell) scalarRun() func(int) error {
	call := c.t.pread
	if c.Op == "write" {
		call = c.t.pwrite
	}
	want := c.want() / c.Segments
	return func(n int) error {
		for range n {
			off := c.next()
			for _, b := range c.vec {
				if m, err := call(b, off); m != want {
					return c.short("scalar", m, want, err)
				}
				off += int64(len(b))
			}
		}
		return nil
	}
}

func (c *MatrixCell) short(what string, got, want int, err error) error {
	if err != nil {
		return fmt.Errorf("%s %s: %w", c.Name(), what, err)
	}
	return fmt.Errorf("%s %s: %d of %d bytes", c.Name(), what, got, want)
}

// measureQuick is measure without settling the heap first: the matrix
// settles once per round, since its production cells do not allocate.
func measureQuick(run func(int) error, n int) (d time.Duration, allocs, bytes uint64, err error) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := clock()
	err = run(n)
	d = clock().Sub(start)
	runtime.ReadMemStats(&m1)
	return d, m1.Mallocs - m0.Mallocs, m1.TotalAlloc - m0.TotalAlloc, err
}

// calibrate sets c.Ops so that each variant takes about target per round.
//
// The count that reaches a quarter of target is timed twice more and the
// shortest of the three taken: with one timing, a preemption on a busy
// machine could make a 4 MiB cell's single call look like 3 ms and leave
// it one call a round (and so one untimed call of warm-up), as it did for
// six such cells at load average 20.
func (c *MatrixCell) calibrate(target time.Duration) error {
	v, s := c.vectoredRun(), c.scalarRun()
	pair := func(n int) (time.Duration, error) {
		start := time.Now()
		if err := v(n); err != nil {
			return 0, err
		}
		if err := s(n); err != nil {
			return 0, err
		}
		return time.Since(start) / 2, nil // per variant
	}
	n := 1
	for {
		d, err := pair(n)
		if err != nil {
			return err
		}
		if d >= target/4 || n >= 1<<24 {
			for range 2 {
				e, err := pair(n)
				if err != nil {
					return err
				}
				d = min(d, e)
			}
			c.Ops = max(1, int(float64(n)*float64(target)/float64(max(d, 1))))
			return nil
		}
		n *= 4
	}
}

func runMatrix(p Params, o Options, res *Result) (err error) {
	m, drivers, ops, err := matrixPlan(p)
	if err != nil {
		return err
	}
	res.Matrix = m
	env, err := newMatrixEnv()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := env.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	targets, err := matrixCells(m, drivers, ops, env, res)
	defer func() {
		if cerr := closeTargets(targets); cerr != nil && err == nil {
			err = fmt.Errorf("matrix: close: %w", cerr)
		}
	}()
	if err != nil {
		return err
	}
	if len(m.Cells) == 0 {
		return nil
	}
	for i, c := range m.Cells {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "\r\033[Kmatrix: calibrating %s (%d%%)", c.Name(), 100*i/len(m.Cells))
		}
		if err := c.calibrate(m.CellTime); err != nil {
			return err
		}
		c.Vectored = &VariantResult{Name: matrixOps[opIndex(c.Op)].vectored, ops: c.Ops}
		c.Scalar = &VariantResult{Name: matrixOps[opIndex(c.Op)].scalar, ops: c.Ops}
	}
	pairs := make([]matrixPair, len(m.Cells))
	for i, c := range m.Cells {
		pairs[i] = matrixPair{c, c.vectoredRun(), c.scalarRun()}
	}
	// The heap is settled once: the production cells do not allocate, so
	// no collection should run during the rounds, and one that did would
	// also empty the sector-buffer pools that unaligned block I/O uses,
	// charging their refill to the next cell.
	settle()
	if err := matrixRounds(pairs, p.Loops, "", o); err != nil {
		return err
	}
	for _, c := range m.Cells {
		c.ratio()
	}
	return m.secondPass(pairs, o)
}

// secondPass measures again, in m.Confirm fresh rounds, the cells of
// pairs whose ratio lies above 1.0 beyond noise, keeping the first
// pass's ratio in FirstPass. Each cell's CI is a 95% interval, so with
// hundreds of cells some lie above 1.0 by chance alone: in runs where
// both variants of every cell were the same code (null, zero, tmpfs and
// ram, 192 cells) 4 CIs lay above 1.0 and 5 below. The fresh rounds alone
// give the cell's ratio, so the first pass's selection does not bias the
// estimate; a real loss shows again.
func (m *Matrix) secondPass(pairs []matrixPair, o Options) error {
	if m.Confirm == 0 {
		return nil
	}
	var again []matrixPair
	for _, x := range pairs {
		if c := x.c; c.Ratio.CI.Low > 1 {
			first := c.Ratio
			c.FirstPass = &first
			c.Vectored = &VariantResult{Name: c.Vectored.Name, ops: c.Ops}
			c.Scalar = &VariantResult{Name: c.Scalar.Name, ops: c.Ops}
			again = append(again, x)
		}
	}
	if len(again) == 0 {
		return nil
	}
	if err := matrixRounds(again, m.Confirm, "second pass, ", o); err != nil {
		return err
	}
	for _, x := range again {
		x.c.ratio()
	}
	return nil
}

// matrixPair is a cell with its two variants' Runs.
type matrixPair struct {
	c    *MatrixCell
	v, s func(int) error
}

// matrixRounds measures the cells of pairs in one warm-up round, which is
// discarded, and loops rounds, appending to each cell's VariantResults.
func matrixRounds(pairs []matrixPair, loops int, label string, o Options) error {
	for round := 0; round <= loops; round++ {
		start := time.Now()
		for j := range pairs {
			ci := (round + j) % len(pairs)
			x := pairs[ci]
			if o.Progress != nil && j%16 == 0 {
				fmt.Fprintf(o.Progress, "\r\033[Kmatrix: %s%s, %s (%d%%)", label, roundName(round, loops), x.c.Name(), 100*(round*len(pairs)+j)/((loops+1)*len(pairs)))
			}
			first, second := x.v, x.s
			fr, sr := x.c.Vectored, x.c.Scalar
			// Which variant goes first alternates from round to round
			// for each cell. (It was (round+j)%2, which is ci%2 for an
			// even number of cells: every cell ran the same variant first
			// in all rounds, and the 4 MiB cells, slower first, showed
			// it: see the README's matrix section.)
			vfirst := (round+ci)%2 == 0
			if !vfirst {
				first, second, fr, sr = second, first, sr, fr
			}
			for _, y := range []struct {
				run func(int) error
				r   *VariantResult
			}{{first, fr}, {second, sr}} {
				// Untimed calls first, a quarter of the measured ones, so
				// that each variant starts in the steady state of its own
				// bytes whatever ran before it. Without any, cells of a
				// few MiB a call measured whichever variant ran first in
				// a round slower, and with one call a round the ratio
				// swung between 0.8 and 1.3; with one untimed call the
				// first variant of a 1024 x 4 KiB cell still measured 3
				// to 10% slower than the second (zero and tmpfs, 8 rounds
				// each way), with Ops/4 the two orders agree within 3%.
				if err := y.run(max(1, x.c.Ops/4)); err != nil {
					return fmt.Errorf("matrix: %sround %d: %w", label, round, err)
				}
				d, allocs, bytes, err := measureQuick(y.run, x.c.Ops)
				if err != nil {
					return fmt.Errorf("matrix: %sround %d: %w", label, round, err)
				}
				if round == 0 {
					y.r.Warmup = d
					continue
				}
				y.r.Rounds = append(y.r.Rounds, d)
				y.r.Allocs = append(y.r.Allocs, allocs)
				y.r.Bytes = append(y.r.Bytes, bytes)
			}
		}
		if o.Progress != nil {
			fmt.Fprint(o.Progress, "\r\033[K")
		}
		if o.Rounds != nil {
			note := ""
			if round == 0 {
				note = " (warm-up, discarded)"
			}
			fmt.Fprintf(o.Rounds, "matrix %s%s: %d cells in %s%s\n", label, roundName(round, loops), len(pairs), time.Since(start).Round(time.Millisecond), note)
		}
	}
	return nil
}

// ratio summarizes the cell's variants and sets its Ratio.
func (c *MatrixCell) ratio() {
	c.Vectored.summarize()
	c.Scalar.summarize()
	med, ci := PairedRatio(c.Vectored.NsPerOpRounds(), c.Scalar.NsPerOpRounds(), Level, Resamples, bootstrapSeed)
	c.Ratio = Ratio{A: c.Vectored.Name, B: c.Scalar.Name, Median: med, CI: ci}
}

func opIndex(op string) int {
	if op == "write" {
		return 1
	}
	return 0
}

// Worst returns the cell with the highest ratio, or nil.
func (m *Matrix) Worst() *MatrixCell {
	var w *MatrixCell
	for _, c := range m.Cells {
		if w == nil || c.Ratio.Median > w.Ratio.Median {
			w = c
		}
	}
	return w
}

// Cell returns the named cell, or nil.
func (m *Matrix) Cell(driver, op string, segs, size int) *MatrixCell {
	for _, c := range m.Cells {
		if c.Driver == driver && c.Op == op && c.Segments == segs && c.Size == size {
			return c
		}
	}
	return nil
}
