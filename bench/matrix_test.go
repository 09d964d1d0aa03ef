package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// openMatrix opens every matrix driver; drivers the machine cannot
// provide are skipped with a log line.
func openMatrix(t *testing.T) (names []string, targets []*matrixTarget) {
	t.Helper()
	env, err := newMatrixEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.close() })
	for _, d := range matrixDrivers {
		tg, err := d.Open(env)
		if err != nil {
			if strings.Contains(err.Error(), ErrSkip.Error()) {
				t.Logf("%s: %v", d.Name, err)
				continue
			}
			t.Fatalf("%s: %v", d.Name, err)
		}
		t.Cleanup(func() {
			if err := tg.close(); err != nil {
				t.Errorf("%s: close: %v", d.Name, err)
			}
		})
		names = append(names, d.Name)
		targets = append(targets, tg)
	}
	return names, targets
}

// sampleCells are the vector shapes the tests check: every segment count
// of the default run with the sizes where the paths differ (1 B and 512 B
// take a block device's unaligned path, 4 KiB its aligned one), plus the
// largest shapes at a count that keeps the test fast.
func sampleCells() [][2]int {
	var s [][2]int
	for _, segs := range []int{1, 2, 8, 16, 64, 1024} {
		for _, size := range []int{1, 512, 4096} {
			s = append(s, [2]int{segs, size})
		}
	}
	return append(s, [2]int{2, 64 << 10}, [2]int{16, 64 << 10})
}

func newCell(name string, t *matrixTarget, op string, segs, size int) *MatrixCell {
	c := &MatrixCell{Driver: name, Op: op, Segments: segs, Size: size, t: t, window: matrixFileSize}
	c.buf = make([]byte, segs*size)
	c.vec = make([][]byte, segs)
	for i := range c.vec {
		c.vec[i] = c.buf[i*size : (i+1)*size : (i+1)*size]
	}
	return c
}

// TestMatrixSameBytes checks that the two variants of every sampled cell
// do the same work: at the same offset (an odd one, so block devices take
// their unaligned paths) the vectored read returns the same count and
// bytes as the loop of scalar reads, and what each kind of write stores
// reads back as what it was given.
func TestMatrixSameBytes(t *testing.T) {
	names, targets := openMatrix(t)
	data := matrixData(matrixFileSize)
	for i, tg := range targets {
		if names[i] == "pipe" {
			continue // a stream, not a file: TestMatrixPipeSameBytes
		}
		for _, sh := range sampleCells() {
			segs, size := sh[0], sh[1]
			off := int64(4096*3 + 7)
			c := newCell(names[i], tg, "read", segs, size)
			t.Run(c.Name(), func(t *testing.T) {
				n, err := tg.preadv(c.vec, off)
				if n != c.want() || err != nil {
					t.Fatalf("preadv: %d, %v; want %d", n, err, c.want())
				}
				got := bytes.Clone(c.buf)
				clear(c.buf)
				pos := off
				for _, b := range c.vec {
					if n, err := tg.pread(b, pos); n != c.want()/segs || err != nil {
						t.Fatalf("pread at %d: %d, %v", pos, n, err)
					}
					pos += int64(len(b))
				}
				if !bytes.Equal(got, c.buf) {
					t.Fatal("preadv and the preads returned different bytes")
				}
				switch names[i] {
				case "null":
				case "zero":
					if bytes.Count(got, []byte{0}) != len(got) {
						t.Fatal("zero returned a non-zero byte")
					}
				default:
					if !bytes.Equal(got, data[off:off+int64(len(got))]) {
						t.Fatal("read bytes are not the file's")
					}
				}
			})
			if tg.pwritev == nil {
				continue
			}
			w := newCell(names[i], tg, "write", segs, size)
			t.Run(w.Name(), func(t *testing.T) {
				for k, write := range []func() (int, error){
					func() (int, error) { return tg.pwritev(w.vec, off) },
					func() (int, error) {
						pos, done := off, 0
						for _, b := range w.vec {
							n, err := tg.pwrite(b, pos)
							done += n
							if n != len(b) || err != nil {
								return done, err
							}
							pos += int64(len(b))
						}
						return done, nil
					},
				} {
					for j := range w.buf {
						w.buf[j] = byte(j*7 + k + 1)
					}
					if n, err := write(); n != len(w.buf) || err != nil {
						t.Fatalf("write %d: %d, %v", k, n, err)
					}
					if names[i] == "null" || names[i] == "zero" {
						continue
					}
					back := make([]byte, len(w.buf))
					if n, err := tg.pread(back, off); n != len(back) || err != nil {
						t.Fatalf("read back: %d, %v", n, err)
					}
					if !bytes.Equal(back, w.buf) {
						t.Fatalf("write %d: the bytes read back differ from those written", k)
					}
				}
				// Put the file's bytes back for the next read cells.
				if n, err := tg.pwrite(data[off:off+int64(len(w.buf))], off); n != len(w.buf) || err != nil {
					t.Fatalf("restore: %d, %v", n, err)
				}
			})
		}
	}
}

// allCells are the vector shapes of a default run.
func allCells() [][2]int {
	var s [][2]int
	for _, segs := range []int{1, 2, 8, 16, 64, 1024} {
		for _, size := range []int{1, 512, 4096, 64 << 10} {
			s = append(s, [2]int{segs, size})
		}
	}
	return s
}

// TestMatrixAllocs: neither variant of any cell of a default run
// allocates (with -short, of the sampled cells).
func TestMatrixAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("under -race sync.Pool drops items, so pooled sector buffers allocate; CI's run without -race checks this")
	}
	names, targets := openMatrix(t)
	for i, tg := range targets {
		for _, op := range []string{"read", "write"} {
			if op == "write" && tg.pwritev == nil {
				continue
			}
			shapes := allCells()
			if testing.Short() {
				shapes = sampleCells()
			}
			for _, sh := range shapes {
				c := newCell(names[i], tg, op, sh[0], sh[1])
				v, s := c.vectoredRun(), c.scalarRun()
				runs := 3
				if c.Total() > 1<<20 {
					runs = 1 // 4 and 64 MiB a call
				}
				for _, x := range []struct {
					name string
					run  func(int) error
				}{{"vectored", v}, {"scalar", s}} {
					if runs == 1 {
						// A collection started by the previous cell's
						// buffer would empty the pools (hostfs's iovec
						// arrays, the sector buffers) between the warm-up
						// call and the measured one.
						runtime.GC()
					}
					var err error
					a := testing.AllocsPerRun(runs, func() {
						if e := x.run(1); e != nil {
							err = e
						}
					})
					if err != nil {
						t.Fatalf("%s %s: %v", c.Name(), x.name, err)
					}
					if a != 0 {
						t.Errorf("%s %s: %v allocations per call, want 0", c.Name(), x.name, a)
					}
				}
			}
		}
	}
}

// TestMatrixRun runs a small matrix through the harness and checks every
// output: the tables and summary line, JSON, benchstat lines and the heat
// map.
func TestMatrixRun(t *testing.T) {
	e := Lookup("matrix")
	if e == nil {
		t.Fatal("matrix is not registered")
	}
	p := Params{Loops: 3, Extra: map[string]string{"drivers": "null,tmpfs", "segments": "1,8", "sizes": "1,4K", "cell-time": "200us", "confirm": "3"}}
	var rounds bytes.Buffer
	res, err := Run(e, p, Options{Rounds: &rounds})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Matrix
	if m == nil {
		t.Fatal("no matrix in the result")
	}
	// 2 drivers x (read + write) x 2 segment counts x 2 sizes.
	if len(m.Cells) != 16 {
		t.Fatalf("%d cells, want 16", len(m.Cells))
	}
	for _, c := range m.Cells {
		if len(c.Vectored.Rounds) != 3 || len(c.Scalar.Rounds) != 3 || c.Ops < 1 {
			t.Errorf("%s: %d and %d rounds, %d ops", c.Name(), len(c.Vectored.Rounds), len(c.Scalar.Rounds), c.Ops)
		}
		if !(c.Ratio.Median > 0) || c.Ratio.CI.Low > c.Ratio.Median || c.Ratio.CI.High < c.Ratio.Median {
			t.Errorf("%s: ratio %v", c.Name(), c.Ratio)
		}
		if allocates(c.Vectored.AllocsPerOp) || allocates(c.Scalar.AllocsPerOp) {
			t.Errorf("%s: allocs/op %v, %v", c.Name(), c.Vectored.AllocsPerOp, c.Scalar.AllocsPerOp)
		}
	}
	if got := strings.Count(rounds.String(), "matrix ") - strings.Count(rounds.String(), "matrix second pass"); got != 4 {
		t.Errorf("%d round lines, want 4:\n%s", got, rounds.String())
	}
	var sum bytes.Buffer
	if err := WriteSummary(&sum, res); err != nil {
		t.Fatal(err)
	}
	w := m.Worst()
	for _, s := range []string{"worst cell: " + w.Name(), "tmpfs/write/8x4KiB", "8x4KiB"} {
		if !strings.Contains(sum.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, sum.String())
		}
	}

	var j bytes.Buffer
	if err := WriteJSON(&j, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	var f File
	if err := json.Unmarshal(j.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	mj := f.Experiments[0].Matrix
	if mj == nil || len(mj.Cells) != 16 || mj.Cells[0].Vectored.Name != "preadv" || len(mj.Cells[0].Scalar.RoundSeconds) != 3 || !strings.HasPrefix(mj.Summary, "worst cell") {
		t.Fatalf("JSON matrix: %+v", mj)
	}

	var b bytes.Buffer
	if err := WriteBenchstat(&b, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	names := checkBenchstat(t, b.String())
	for _, n := range []string{"BenchmarkMatrix/tmpfs/read/8x4KiB/preadv", "BenchmarkMatrix/null/write/1x1B/pwrite"} {
		if names[n] != 3 {
			t.Errorf("%s: %d benchstat lines, want 3", n, names[n])
		}
	}

	png := filepath.Join(t.TempDir(), "m.png")
	if err := WritePlot(png, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Fatalf("plot: %v, %v", st, err)
	}
}

// TestMatrixSecondPass checks that a cell above 1.0 beyond noise is
// measured again in fresh rounds, which alone give its ratio.
func TestMatrixSecondPass(t *testing.T) {
	spin := func(work int) func(int) error {
		return func(n int) error {
			x := 0
			for i := range n * work {
				x += i
			}
			sink = sink[:0]
			if x < 0 {
				sink = append(sink, 1)
			}
			return nil
		}
	}
	m := &Matrix{Confirm: 4}
	var pairs []matrixPair
	for _, name := range []string{"slow", "same"} {
		c := &MatrixCell{Driver: name, Op: "read", Segments: 1, Size: 1, Ops: 200}
		c.Vectored = &VariantResult{Name: "preadv", ops: c.Ops}
		c.Scalar = &VariantResult{Name: "pread", ops: c.Ops}
		m.Cells = append(m.Cells, c)
		v := spin(20000)
		if name == "slow" {
			// Ten times the work: a ratio no scheduling noise on a
			// busy machine (other packages' tests, -race) brings
			// near 1 in six rounds.
			v = spin(200000)
		}
		pairs = append(pairs, matrixPair{c, v, spin(20000)})
	}
	if err := matrixRounds(pairs, 6, "", Options{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Cells {
		c.ratio()
	}
	if err := m.secondPass(pairs, Options{}); err != nil {
		t.Fatal(err)
	}
	slow, same := m.Cells[0], m.Cells[1]
	if slow.FirstPass == nil || len(slow.Vectored.Rounds) != 4 || len(slow.Scalar.Rounds) != 4 || !(slow.Ratio.Median > 1) {
		t.Errorf("slow cell: first pass %v, %d and %d rounds, ratio %v; want a first pass, 4 fresh rounds, ratio above 1",
			slow.FirstPass, len(slow.Vectored.Rounds), len(slow.Scalar.Rounds), slow.Ratio)
	}
	if same.FirstPass == nil && len(same.Vectored.Rounds) != 6 {
		t.Errorf("same cell, not measured again: %d rounds, want the first pass's 6", len(same.Vectored.Rounds))
	}
	if s := MatrixSummary(m); !strings.Contains(s, "in the first pass, measured again in 4 rounds") {
		t.Errorf("summary %q does not name the second pass", s)
	}
}

func TestMatrixFlags(t *testing.T) {
	for _, c := range []struct{ flag, value, want string }{
		{"drivers", "tmpfs,nope", "no such driver"},
		{"segments", "0", "1 to 1024"},
		{"segments", "1025", "1 to 1024"},
		{"sizes", "x", "--sizes"},
		{"cell-time", "soon", "--cell-time"},
		{"window", "65M", "--window"},
		{"confirm", "-1", "--confirm"},
	} {
		p := Params{Loops: 1, Extra: map[string]string{c.flag: c.value}}
		_, err := Run(Lookup("matrix"), p, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--%s %s: err %v, want one mentioning %q", c.flag, c.value, err, c.want)
		}
	}
	// Cells over 64 MiB a call are left out.
	p := Params{Loops: 1, Extra: map[string]string{"drivers": "null", "segments": "1024", "sizes": "64K,128K", "cell-time": "100us"}}
	res, err := Run(Lookup("matrix"), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(len(res.Matrix.Cells)); got != "2" {
		t.Errorf("%s cells, want 2 (read and write of 1024x64KiB)", got)
	}
}

// TestMatrixPipeSameBytes is TestMatrixSameBytes for the pipe driver,
// whose bytes are a stream: every sampled cell's readv and its loop of
// reads each return the next bytes of the feeder's stream, and what a
// writev and a loop of writes put into the drained pipe comes out of it
// unchanged and in order.
func TestMatrixPipeSameBytes(t *testing.T) {
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var drained []byte
	tg, err := newPipeTarget(func(b []byte) {
		mu.Lock()
		drained = append(drained, b...)
		mu.Unlock()
		cond.Broadcast()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tg.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	stream := matrixData(pipeFeedChunk)
	// check compares b with the stream from position *pos and moves on.
	check := func(b []byte, pos *int) bool {
		for i := range b {
			if b[i] != stream[(*pos+i)%len(stream)] {
				return false
			}
		}
		*pos += len(b)
		return true
	}
	// The drained pipe starts with the pipe's worth of the stream that
	// newPipeTarget writes into it to allocate its pages.
	rpos, written := 0, bytes.Repeat(stream, pipeMatrixSize/pipeFeedChunk)
	for _, sh := range append(sampleCells(), [2]int{64, 64 << 10}) {
		segs, size := sh[0], sh[1]
		c := newCell("pipe", tg, "read", segs, size)
		t.Run(c.Name(), func(t *testing.T) {
			if n, err := tg.preadv(c.vec, 0); n != c.Total() || err != nil {
				t.Fatalf("readv: %d, %v; want %d", n, err, c.Total())
			}
			if !check(c.buf, &rpos) {
				t.Fatal("readv returned bytes that are not the stream's next")
			}
			clear(c.buf)
			for _, b := range c.vec {
				if n, err := tg.pread(b, 0); n != len(b) || err != nil {
					t.Fatalf("read: %d, %v", n, err)
				}
			}
			if !check(c.buf, &rpos) {
				t.Fatal("the reads returned bytes that are not the stream's next")
			}
		})
		w := newCell("pipe", tg, "write", segs, size)
		t.Run(w.Name(), func(t *testing.T) {
			for k := range 2 {
				for j := range w.buf {
					w.buf[j] = byte(j*7 + k + len(written))
				}
				n, err := 0, error(nil)
				if k == 0 {
					n, err = tg.pwritev(w.vec, 0)
				} else {
					for _, b := range w.vec {
						m, e := tg.pwrite(b, 0)
						n, err = n+m, e
						if m != len(b) || e != nil {
							break
						}
					}
				}
				if n != len(w.buf) || err != nil {
					t.Fatalf("write %d: %d, %v", k, n, err)
				}
				written = append(written, w.buf...)
			}
			mu.Lock()
			for len(drained) < len(written) {
				cond.Wait()
			}
			same := bytes.Equal(drained, written)
			first := -1
			for i := range min(len(drained), len(written)) {
				if drained[i] != written[i] {
					first = i
					break
				}
			}
			ld := len(drained)
			mu.Unlock()
			if !same {
				t.Fatalf("the drained bytes differ from those written: %d vs %d, first at %d", ld, len(written), first)
			}
		})
	}
}
