package bench

// The pipe experiment: an iovfs pipe between two goroutines
// against a host pipe (os.Pipe), Go's io.Pipe and a buffered channel of
// []byte, for throughput (64 KiB writes and reads) and for the latency of
// a 1-byte ping-pong. Each variant keeps a peer goroutine for its whole
// run: the writer for throughput, the echo for ping-pong.

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/vfs"
)

// pipeChunk is the throughput experiment's write and read size.
const pipeChunk = 64 << 10

// pipeKinds are the transports compared, in display order.
var pipeKinds = []string{"iovfs", "os-pipe", "io-pipe", "chan"}

var pipeExperiment = &Experiment{
	Name:     "pipe",
	Summary:  "pipe throughput between two goroutines, 64 KiB writes and reads: iovfs vs os.Pipe, io.Pipe and a buffered chan []byte",
	Baseline: "iovfs",
	Defaults: Params{Loops: 10, Ops: 10000, Size: pipeChunk},
	Unit:     "transfers",
	Describe: func(p Params) string {
		return fmt.Sprintf("%d transfers of %d B, written by one goroutine and read by another", p.Ops, p.Size)
	},
	Variants: pipeVariants("throughput", pipeThroughput),
	Report:   pipeRates,
}

var pipePingPongExperiment = &Experiment{
	Name:     "pipe-pingpong",
	Summary:  "pipe latency: 1-byte ping-pong between two goroutines over two pipes, iovfs vs os.Pipe, io.Pipe and a buffered chan []byte",
	Baseline: "iovfs",
	Defaults: Params{Loops: 10, Ops: 20000, Size: 1},
	Unit:     "round trips",
	Describe: func(p Params) string {
		return fmt.Sprintf("%d round trips of %d B through an echo goroutine", p.Ops, p.Size)
	},
	Variants: pipeVariants("1-byte round trips", pipePingPong),
	Report:   pipeRates,
}

func pipeVariants(what string, setup func(kind string) func(Params, any) (Op, error)) []Variant {
	docs := map[string]string{
		"iovfs":   "an iovfs pipe (Proc.Pipe2), blocking reads and writes",
		"os-pipe": "a host pipe through os.Pipe (the kernel, and Go's netpoller when a call would block)",
		"io-pipe": "Go's io.Pipe: each write is handed to a waiting read",
		"chan":    "a buffered chan []byte (cap 4) with a pool of buffers: the writer copies in, the reader copies out",
	}
	var vs []Variant
	for _, k := range pipeKinds {
		vs = append(vs, Variant{Name: k, Doc: what + ": " + docs[k], Setup: setup(k)})
	}
	return vs
}

// byteStream is one direction of a transport: what the variants time.
type byteStream struct {
	// write writes all of b; read reads up to len(b) bytes, 0 at the end.
	write  func(b []byte) error
	read   func(b []byte) (int, error)
	closeW func() error
	closeR func() error
}

// newStream makes one direction of transport kind.
func newStream(kind string, p *vfs.Proc) (*byteStream, error) {
	switch kind {
	case "iovfs":
		r, w, err := p.Pipe2(0)
		if err != nil {
			return nil, err
		}
		return &byteStream{
			write: func(b []byte) error {
				for len(b) > 0 {
					n, err := p.Write(w, b)
					if err != nil {
						return err
					}
					b = b[n:]
				}
				return nil
			},
			read:   func(b []byte) (int, error) { return p.Read(r, b) },
			closeW: func() error { return p.Close(w) },
			closeR: func() error { return p.Close(r) },
		}, nil
	case "os-pipe":
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		return &byteStream{
			write: func(b []byte) error { _, err := w.Write(b); return err },
			read: func(b []byte) (int, error) {
				n, err := r.Read(b)
				if err == io.EOF {
					err = nil
				}
				return n, err
			},
			closeW: w.Close, closeR: r.Close,
		}, nil
	case "io-pipe":
		r, w := io.Pipe()
		return &byteStream{
			write: func(b []byte) error { _, err := w.Write(b); return err },
			read: func(b []byte) (int, error) {
				n, err := r.Read(b)
				if err == io.EOF {
					err = nil
				}
				return n, err
			},
			closeW: w.Close, closeR: r.Close,
		}, nil
	case "chan":
		return chanStream(), nil
	}
	return nil, fmt.Errorf("pipe: no transport %q", kind)
}

// chanStream is a buffered channel of []byte with its buffers recycled
// through a second channel, so that, like a pipe, it copies in and out
// and does not allocate. A read takes one message; a message longer than
// the read is split.
func chanStream() *byteStream {
	const depth = 4
	data := make(chan []byte, depth)
	free := make(chan []byte, depth)
	for range depth {
		free <- make([]byte, pipeChunk)
	}
	var cur, held []byte
	return &byteStream{
		write: func(b []byte) error {
			for len(b) > 0 {
				m := <-free
				n := copy(m[:cap(m)], b)
				data <- m[:n]
				b = b[n:]
			}
			return nil
		},
		read: func(b []byte) (int, error) {
			if len(cur) == 0 {
				if held != nil {
					free <- held[:cap(held)]
					held = nil
				}
				m, ok := <-data
				if !ok {
					return 0, nil
				}
				cur, held = m, m
			}
			n := copy(b, cur)
			cur = cur[n:]
			return n, nil
		},
		closeW: func() error { close(data); return nil },
		closeR: func() error { return nil },
	}
}

// readFull reads exactly len(b) bytes.
func (s *byteStream) readFull(b []byte) error {
	for len(b) > 0 {
		n, err := s.read(b)
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrUnexpectedEOF
		}
		b = b[n:]
	}
	return nil
}

func pipeProc() (*vfs.Proc, error) { return iovfs.New(iovfs.WithRAMDisks(0, 0)) }

// pipeThroughput: Run(n) has the peer write n chunks while it reads them.
func pipeThroughput(kind string) func(Params, any) (Op, error) {
	return func(prm Params, _ any) (Op, error) {
		p, err := pipeProc()
		if err != nil {
			return Op{}, err
		}
		s, err := newStream(kind, p)
		if err != nil {
			return Op{}, err
		}
		ctl := make(chan int)
		done := make(chan error)
		go func() {
			src := make([]byte, prm.Size)
			for n := range ctl {
				var err error
				for range n {
					if err = s.write(src); err != nil {
						break
					}
				}
				done <- err
			}
			done <- s.closeW()
		}()
		dst := make([]byte, prm.Size)
		run := func(n int) error {
			ctl <- n
			want := n * len(dst)
			for want > 0 {
				m, err := s.read(dst[:min(len(dst), want)])
				if err != nil {
					return err
				}
				if m == 0 {
					return io.ErrUnexpectedEOF
				}
				want -= m
			}
			return <-done
		}
		return Op{Run: run, Close: func() error {
			close(ctl)
			err := <-done
			return errors.Join(err, s.closeR())
		}}, nil
	}
}

// pipePingPong: Run(n) makes n round trips of a Size-byte message (1 by
// default) through an echo goroutine, which sends back what each read
// returns.
func pipePingPong(kind string) func(Params, any) (Op, error) {
	return func(prm Params, _ any) (Op, error) {
		p, err := pipeProc()
		if err != nil {
			return Op{}, err
		}
		there, err := newStream(kind, p)
		if err != nil {
			return Op{}, err
		}
		back, err := newStream(kind, p)
		if err != nil {
			return Op{}, err
		}
		echoed := make(chan error, 1)
		go func() {
			b := make([]byte, prm.Size)
			for {
				n, err := there.read(b)
				if err != nil || n == 0 {
					echoed <- errors.Join(err, back.closeW())
					return
				}
				if err := back.write(b[:n]); err != nil {
					echoed <- err
					return
				}
			}
		}()
		b := make([]byte, prm.Size)
		run := func(n int) error {
			for range n {
				if err := there.write(b); err != nil {
					return err
				}
				if err := back.readFull(b); err != nil {
					return err
				}
			}
			return nil
		}
		return Op{Run: run, Close: func() error {
			err := there.closeW()
			err = errors.Join(err, <-echoed, there.closeR(), back.closeR())
			return err
		}}, nil
	}
}

// pipeRates writes what a transport achieves per second, and each
// transport's speed relative to iovfs (how many times iovfs's time its
// own takes: above 1, iovfs is faster).
func pipeRates(w io.Writer, res *Result) {
	fmt.Fprintln(w)
	for _, v := range res.Variants {
		rate := 1e9 / v.NsPerOp
		unit := "round trips/s"
		if res.Experiment.Name == "pipe" {
			rate = float64(res.Params.Size) / v.NsPerOp * 1e3
			unit = "MB/s"
		}
		line := fmt.Sprintf("%-8s %10.0f %s", v.Name, rate, unit)
		if r, ok := res.Ratio(v.Name); ok {
			line += fmt.Sprintf(", %sx iovfs's time (95%% CI %s .. %s)", fmtRatio(r.Median), fmtRatio(r.CI.Low), fmtRatio(r.CI.High))
		}
		fmt.Fprintln(w, line)
	}
}
