package bench

// The wasi experiment: a guest's fd_read and fd_write through iovfs's
// wasi module (one vectored call on a *vfs.Proc) against wazero's own
// WASI on the host's files, in one run. The guest is a module assembled
// by internal/wasmgen whose exported loop calls the WASI function n times,
// so each operation is one guest-to-host call.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/wasmgen"
	"github.com/iovfs/iovfs/wasi"
)

// wasiCase is one of the experiment's operations.
type wasiCase struct {
	name, doc string
	dir, file string // directory preopened as fd 3, file opened as fd 4
	write     bool
	segs      int
	segSize   uint32
	seek      bool // seek back to 0 after each call (a read of the whole file)
}

var wasiCases = []wasiCase{
	{name: "zero-1B", doc: "1-byte fd_read of /dev/zero", dir: "/dev", file: "zero", segs: 1, segSize: 1},
	{name: "tmpfs-16x4K", doc: "16-iovec fd_read of 64 KiB (16 x 4 KiB) from a tmpfs file, then fd_seek to 0", dir: "tmp", file: "f", segs: 16, segSize: 4096, seek: true},
	{name: "null-4K", doc: "4 KiB fd_write to /dev/null", dir: "/dev", file: "null", write: true, segs: 1, segSize: 4096},
}

var wasiExperiment = &Experiment{
	Name:     "wasi",
	Summary:  "WASI fd_read/fd_write from a wasm guest: iovfs's wasi module against wazero's own WASI on host files",
	Baseline: "iovfs/zero-1B",
	Defaults: Params{Loops: 10, Ops: 20000, Size: 1}, // sizes are per operation, fixed below
	Unit:     "calls",
	Describe: func(p Params) string {
		return fmt.Sprintf("%d WASI calls per round from a wazero guest's loop; iovfs on its own /dev and tmpfs, wazero on the host's /dev and a file on the host's /dev/shm (tmpfs)", p.Ops)
	},
	Setup:  wasiSetup,
	Report: wasiTable,
}

func init() {
	for _, c := range wasiCases {
		c := c
		wasiExperiment.Variants = append(wasiExperiment.Variants,
			Variant{Name: "iovfs/" + c.name, Doc: c.doc + ", iovfs wasi on a *vfs.Proc: one Readv/Writev per call", Setup: func(p Params, env any) (Op, error) { return wasiGuest(c, true, env.(string)) }},
			Variant{Name: "wazero/" + c.name, Doc: c.doc + ", wazero's built-in WASI on the host file: one read or write per iovec", Setup: func(p Params, env any) (Op, error) { return wasiGuest(c, false, env.(string)) }},
		)
	}
}

// wasiSetup makes the host tmpfs directory with the 64 KiB file.
func wasiSetup(Params) (any, func() error, error) {
	dir, err := os.MkdirTemp("/dev/shm", "iovfs-bench-wasi-")
	if err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 64<<10), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return dir, func() error { return os.RemoveAll(dir) }, nil
}

// Guest memory layout.
const (
	wasiIovs   = 1024
	wasiResult = 2048
	wasiPos    = 2056
	wasiPath   = 3000
	wasiFdOut  = 3100
	wasiBufs   = 65536
)

// wasiGuest instantiates the guest in a runtime with iovfs's wasi module
// (on a fresh iovfs process) or wazero's, opens the case's file as fd 4
// through path_open, writes the iovecs, and returns a loop of n calls.
func wasiGuest(c wasiCase, iovfsSide bool, shm string) (Op, error) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	fail := func(err error) (Op, error) { r.Close(ctx); return Op{}, err }
	mc := wazero.NewModuleConfig().WithName("")
	if iovfsSide {
		p, err := iovfs.New()
		if err != nil {
			return fail(err)
		}
		for range 3 {
			if _, err := p.Open("/dev/null", unix.O_RDWR, 0); err != nil {
				return fail(err)
			}
		}
		dir := c.dir
		if dir == "tmp" {
			dir = "/tmp"
			fd, err := p.Open("/tmp/f", unix.O_WRONLY|unix.O_CREAT, 0o644)
			if err != nil {
				return fail(err)
			}
			p.Write(fd, make([]byte, 64<<10))
			p.Close(fd)
		}
		if _, err := wasi.Instantiate(ctx, r, p, wasi.Config{Preopens: []wasi.Preopen{{Path: dir}}}); err != nil {
			return fail(err)
		}
	} else {
		wasi_snapshot_preview1.MustInstantiate(ctx, r)
		dir := c.dir
		if dir == "tmp" {
			dir = shm
		}
		mc = mc.WithFSConfig(wazero.NewFSConfig().WithDirMount(dir, "/d"))
	}
	imports := wasmgen.Imports("fd_read", "fd_write", "fd_seek", "path_open")
	call := wasmgen.Call{Import: 0, Args: []uint64{4, wasiIovs, uint64(c.segs), wasiResult}}
	if c.write {
		call.Import = 1
	}
	calls := []wasmgen.Call{call}
	if c.seek {
		calls = append(calls, wasmgen.Call{Import: 2, Args: []uint64{4, 0, 0, wasiPos}})
	}
	mod, err := r.InstantiateWithConfig(ctx, wasmgen.Module(4, imports, []wasmgen.Loop{{Name: "loop", Calls: calls}}), mc)
	if err != nil {
		return fail(err)
	}
	mem := mod.Memory()
	mem.WriteString(wasiPath, c.file)
	const rights = 1<<1 | 1<<2 | 1<<5 | 1<<6 // fd_read, fd_seek, fd_tell, fd_write
	var base uint64 = rights &^ (1 << 6)
	if c.write {
		base = 1 << 6
	}
	res, err := mod.ExportedFunction("path_open").Call(ctx, 3, 1, wasiPath, uint64(len(c.file)), 0, base, 0, 0, wasiFdOut)
	if err != nil {
		return fail(err)
	}
	if fd, _ := mem.ReadUint32Le(wasiFdOut); res[0] != 0 || fd != 4 {
		return fail(fmt.Errorf("path_open %s: errno %d, fd %d (want 0, 4)", c.file, res[0], fd))
	}
	for i := 0; i < c.segs; i++ {
		mem.WriteUint32Le(wasiIovs+uint32(i)*8, wasiBufs+uint32(i)*c.segSize)
		mem.WriteUint32Le(wasiIovs+uint32(i)*8+4, c.segSize)
	}
	loop := mod.ExportedFunction("loop")
	want := uint32(c.segs) * c.segSize
	stack := make([]uint64, 1)
	run := func(n int) error {
		stack[0] = uint64(n)
		if err := loop.CallWithStack(ctx, stack); err != nil {
			return err
		}
		if stack[0] != 0 {
			return fmt.Errorf("%s: errno %d", c.name, stack[0])
		}
		if got, _ := mem.ReadUint32Le(wasiResult); got != want {
			return fmt.Errorf("%s: %d bytes per call, want %d", c.name, got, want)
		}
		return nil
	}
	return Op{Run: run, Close: func() error { return r.Close(ctx) }}, nil
}

// wasiTable prints, per operation, both runtimes' ns/call and allocs/call
// and wazero's time over iovfs's: the median of the per-round ratios.
func wasiTable(w io.Writer, res *Result) {
	rows := [][]string{{"operation", "iovfs ns/call", "wazero ns/call", "wazero / iovfs", "iovfs allocs/call", "wazero allocs/call"}}
	for _, c := range wasiCases {
		a, b := res.Variant("iovfs/"+c.name), res.Variant("wazero/"+c.name)
		if a == nil || b == nil {
			rows = append(rows, []string{c.name, "did not run"})
			continue
		}
		rows = append(rows, []string{c.name, fmtNs(a.NsPerOp), fmtNs(b.NsPerOp),
			fmt.Sprintf("%.2fx", medianRatio(b.Rounds, a.Rounds)),
			fmt.Sprintf("%.2f", a.AllocsPerOp), fmt.Sprintf("%.2f", b.AllocsPerOp)})
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\niovfs against wazero's WASI, per operation (ratio > 1: iovfs is faster):\n")
	writeTable(&sb, rows, []bool{false, true, true, true, true, true})
	io.WriteString(w, sb.String())
}

// medianRatio is the median over rounds of a[i]/b[i].
func medianRatio[T ~int64](a, b []T) float64 {
	var r []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			r = append(r, float64(a[i])/float64(b[i]))
		}
	}
	if len(r) == 0 {
		return 0
	}
	sort.Float64s(r)
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}
