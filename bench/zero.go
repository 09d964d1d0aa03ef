package bench

// The zero experiment: the NuttX /dev/zero benchmark from the seed
// (reference/seed-nuttx-iovec-revert.txt), run before and after in one
// process, plus the host kernel for scale.

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/dev/mem"
	"github.com/iovfs/iovfs/vfs"
)

var zeroExperiment = &Experiment{
	Name:     "zero",
	Summary:  "the NuttX /dev/zero read benchmark: scalar read vs a read wrapped in a one-segment vector",
	Baseline: "read",
	// Turns: a whole round of 100,000 1-byte reads takes about 1 ms, and
	// this VM moves between a 5 ns and a 9 ns state for every variant
	// alike over similar times, so round-long pairs scattered
	// readv-1seg/read from 0.85 to 1.10 in one session; turns of 2,000
	// reads pair the variants within about 20 us, and five runs in a
	// row gave 0.975 to 1.000.
	Defaults: Params{Loops: 10, Ops: 100000, Size: 1, Turns: 50},
	Unit:     "reads",
	// The variants rotate in a fixed cyclic order, so without a warm-up
	// read always ran straight after host's 100,000 system calls, which
	// leave the caches and branch predictors to the kernel: rounds of read
	// that followed host took up to 1.7 times the others.
	Warm: true,
	Describe: func(p Params) string {
		return fmt.Sprintf("%d reads of %d B from /dev/zero into one reused buffer", p.Ops, p.Size)
	},
	Variants: []Variant{
		{Name: "read", Doc: "iovfs read(2) on /dev/zero, whose driver has a scalar read (NuttX after the revert)", Setup: zeroVFS("", false)},
		{Name: "iter-wrap", Doc: "iovfs read(2) on a zero driver with only a vectored read, so each read is wrapped in a one-segment vector (NuttX 12.8, Linux new_sync_read)", Setup: zeroVFS("zero-iter", false)},
		{Name: "readv-1seg", Doc: "iovfs readv(2) with one segment on /dev/zero", Setup: zeroVFS("", true)},
		{Name: "host", Doc: "the host kernel's read(2) on /dev/zero, through golang.org/x/sys/unix", Setup: zeroHost},
	},
	ReferenceNote: "the seed's figures: NuttX simulator on x86_64, 10 loops of 100000 1-byte read()s of /dev/zero.\n" +
		"  It prints tv_nsec with %ld and no zero padding, so its \"0.28245015s\" is 28,245,015 ns per loop: 282 ns per read.\n" +
		"  Each of its reads is a system call into the simulator, ours a function call in one process,\n" +
		"  so the same fixed overhead per read is a larger fraction here: read the ratio and the difference.",
	Reference: []Reference{
		{Label: "before the revert: read() as a one-segment readv", Variant: "iter-wrap", NsPerOp: 282},
		{Label: "after the revert and NuttX pull request 15603: a plain read()", Variant: "read", NsPerOp: 227},
	},
}

// zeroVFS returns the Setup of an iovfs variant: a fresh process, the zero
// device (or, if dev is not empty, a vectored-only zero device at /dev/dev)
// open for reading, and a loop of read or one-segment readv calls.
func zeroVFS(dev string, vectored bool) func(Params, any) (Op, error) {
	return func(prm Params, _ any) (Op, error) {
		var opts []iovfs.Option
		path := "/dev/zero"
		if dev != "" {
			opts = append(opts, iovfs.WithDevice(dev, mem.VecZero{}))
			path = "/dev/" + dev
		}
		p, err := iovfs.New(opts...)
		if err != nil {
			return Op{}, err
		}
		fd, err := p.Open(path, unix.O_RDONLY, 0)
		if err != nil {
			return Op{}, err
		}
		buf := make([]byte, prm.Size)
		run := readLoop(p, fd, buf)
		if vectored {
			run = readvLoop(p, fd, [][]byte{buf})
		}
		return Op{Run: run, Close: func() error { return p.Close(fd) }}, nil
	}
}

func readLoop(p *vfs.Proc, fd int, buf []byte) func(int) error {
	return func(n int) error {
		for range n {
			if m, err := p.Read(fd, buf); m != len(buf) {
				return shortRead(m, len(buf), err)
			}
		}
		return nil
	}
}

func readvLoop(p *vfs.Proc, fd int, iovs [][]byte) func(int) error {
	want := len(iovs[0])
	return func(n int) error {
		for range n {
			if m, err := p.Readv(fd, iovs); m != want {
				return shortRead(m, want, err)
			}
		}
		return nil
	}
}

func zeroHost(prm Params, _ any) (Op, error) {
	fd, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Op{}, fmt.Errorf("open /dev/zero: %w", err)
	}
	buf := make([]byte, prm.Size)
	run := func(n int) error {
		for range n {
			if m, err := unix.Read(fd, buf); m != len(buf) {
				return shortRead(m, len(buf), err)
			}
		}
		return nil
	}
	return Op{Run: run, Close: func() error { return unix.Close(fd) }}, nil
}

func shortRead(got, want int, err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("short read: %d of %d bytes", got, want)
}
