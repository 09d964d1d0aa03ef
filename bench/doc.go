// Package bench is a same-run A/B harness and the experiments that
// "iovfs bench" runs.
//
// # The harness
//
// An [Experiment] is a set of named [Variant]s of one operation, one of
// which is the baseline. [Run] sets every variant up, then runs one warm-up
// round, which is discarded, and Params.Loops measured rounds. In a round
// every variant does Params.Ops operations in turn; the order rotates by
// one variant each round, so drift on the machine hits every variant alike
// and no variant always runs first or last. Before each variant's turn the
// harness forces garbage collection until the heap stops shrinking, has
// the variant do a quarter of its operations untimed if the experiment
// asks for it ([Experiment].Warm: zero does, since its host variant's
// system calls would otherwise be charged to whichever variant follows
// it, always the same one), then reads runtime.MemStats, times the variant's whole batch with the
// monotonic clock, and reads runtime.MemStats again: the difference in
// Mallocs is the variant's allocations (the harness starts no goroutines,
// so nothing else allocates meanwhile). Variants reuse their buffers.
//
// With Params.Turns above 1 (dax and zero: 50), a measured round is split: the
// variants take turns of Ops/Turns operations, alternating turn by turn
// in the round's order, each turn timed alone and the heap counters read
// between turns; a variant's round time is the sum of its turns, and its
// ratio to another variant in that round is the median of the
// turn-by-turn ratios. On a shared machine the memory bandwidth a
// variant gets changes within milliseconds, so a round-long pairing
// compares different conditions; turns pair within a fraction of one.
//
// [Options].ThreadCPU times the rounds by the measuring thread's CPU time
// instead (iovfs bench --clock thread), which leaves out the time the
// thread is descheduled on a busy machine; it is for experiments whose
// work runs on the measuring goroutine alone.
//
// [Options].LockOSThread wires the measuring goroutine to one OS thread.
// "iovfs bench" leaves it off because it did not make results steadier. On
// a 2-vCPU VM, 20 default runs of "iovfs bench zero" each way, alternating,
// gave these medians over runs of the 95% CI width relative to the estimate:
// read's ns/op 0.25 unlocked, 0.39 locked; iter-wrap's 0.09 and 0.09; the
// iter-wrap/read ratio 0.24 and 0.34. The spread of read's median across
// runs was the same (standard deviation 19% and 18% of the mean). The noise
// on such machines comes from the hypervisor (rounds that lose milliseconds,
// and runs where the same loop is 6 or 10 ns/op throughout), which thread
// locking cannot remove; the medians and same-round pairing are what cope
// with it.
//
// # Statistics
//
// With ten rounds, the estimates are medians and the intervals are
// percentile bootstraps ([BootstrapMedianCI], 10000 resamples), which
// assume no distribution. A variant's ns/op is the median over rounds of
// round time / Ops, with a 95% interval for that median. The ratio of a
// variant A to the baseline B is paired by round: r_i = A_i / B_i for each
// round i, the estimate is the median of the r_i, and its 95% interval is a
// bootstrap that resamples whole rounds ([PairedRatio]). Pairing is sound
// because A_i and B_i ran back to back in the same round, and it cancels
// drift common to a round. A difference is called beyond noise when the
// ratio's interval excludes 1.0. The RNG has a fixed seed, so the same
// rounds always give the same intervals.
//
// # Output
//
// The text output prints one line per variant per round in the seed
// program's format, with the nanoseconds zero-padded ("read  1:spending
// 0.002130415s"), then a summary table, one verdict line per variant and
// the seed's published figures. [WriteBenchstat] writes Go benchmark lines
// (one per variant per round) for benchstat. [WritePlot] draws per-round
// ns/op as SVG or PNG.
//
// [WriteJSON] writes this document ([File]); times per operation are in
// nanoseconds and round times in seconds:
//
//	{
//	  "schema": "iovfs-bench/1",
//	  "machine": {"cpu": "AMD EPYC", "cores": 2, "gomaxprocs": 2,
//	              "go": "go1.26.8", "goos": "linux", "goarch": "amd64",
//	              "kernel": "Linux 6.1.0"},
//	  "experiments": [{
//	    "name": "zero",           // experiment
//	    "baseline": "read",       // the variant ratios divide by
//	    "loops": 10,              // measured rounds (warm-up excluded)
//	    "ops_per_round": 100000,  // operations per variant per round
//	    "size": 1,                // bytes per operation
//	    "turns": 1,               // turns per variant per round (Params.Turns)
//	    "extra": {"pattern": "seq"},  // experiment-specific flags; omitted if none
//	    "lock_os_thread": false,
//	    "clock": "wall",          // or "thread-cpu" (Options.ThreadCPU, --clock thread)
//	    "variants": [{
//	      "name": "read",
//	      "ns_per_op": 21.3,      // median over rounds
//	      "ci95_low": 21.1, "ci95_high": 21.5,  // bootstrap CI of the median
//	      "min_ns_per_op": 21.0, "max_ns_per_op": 22.4,
//	      "allocs_per_op": 0,     // heap allocations per operation, all rounds
//	      "bytes_per_op": 0,
//	      "warmup_seconds": 0.0025,
//	      "round_seconds": [0.00213, ...]  // one per measured round, in order
//	    }, ...],
//	    "ratios": [{              // one per variant other than the baseline
//	      "a": "iter-wrap", "b": "read",
//	      "median": 1.13,         // median of per-round a/b
//	      "ci95_low": 1.12, "ci95_high": 1.14,
//	      "beyond_noise": true    // the CI excludes 1.0
//	    }, ...],
//	    "skipped": [{"variant": "host", "reason": "..."}],  // may be empty
//	    "reference": [{"label": "...", "variant": "iter-wrap", "ns_per_op": 282}]
//	  }]
//	}
//
// Every list is present, possibly empty. "experiments" holds one entry per
// experiment run, in run order.
//
// The matrix experiment's entry has empty "variants" and "ratios" and, in
// addition, its cells ("skipped" lists the drivers that could not run):
//
//	"matrix": {
//	  "drivers": ["null", "zero", ...], "segments": [1, 2, 8, 16, 64, 1024],
//	  "sizes": [1, 512, 4096, 65536],   // as asked for; cells over 64 MiB are left out
//	  "cell_time_seconds": 0.003,       // calibration target per variant per round
//	  "window": 1048576,                // bytes of the file the calls walk
//	  "cells": [{
//	    "driver": "tmpfs", "op": "read",  // or "write"
//	    "segments": 16, "size": 4096,
//	    "native": true,                 // the driver has its own vectored method
//	    "ops_per_round": 773,           // vectored calls, and loops of scalar calls, per round
//	    "vectored": {...}, "scalar": {...},  // as "variants" above; ns_per_op per call or loop
//	    "ratio": {"a": "preadv", "b": "pread", "median": 0.94, ...}, // as "ratios" above
//	    "first_pass": {...}             // only for a cell measured again (--confirm): the first
//	                                    // pass's ratio, above 1.0 beyond noise; the fields above
//	                                    // are then the second pass's
//	  }, ...],
//	  "summary": "worst cell: ..."      // the text summary line
//	}
//
// # The matrix
//
// The matrix experiment (matrix.go) does not use Variant.Setup: it sets
// Experiment.Runner, which Run calls instead of its own rounds. Its
// drivers are a table (matrixDrivers in matrix_drivers.go) of
// constructors, each returning the four calls measured on one open file.
// After its rounds, the cells whose ratio's CI lies above 1.0 are measured
// again in fresh rounds (Matrix.Confirm, --confirm), which alone give
// their ratio: among hundreds of 95% intervals some exclude 1.0 by chance.
//
// # Adding an experiment
//
// Define an *Experiment and add it to the list in registry.go; the command
// picks up its name, flags, variants and help from there:
//
//	var daxExperiment = &Experiment{
//		Name: "dax", Summary: "...", Baseline: "read", Unit: "reads",
//		Defaults: Params{Loops: 10, Ops: 1 << 20, Size: 4096},
//		Flags:    []Flag{{Name: "pattern", Default: "seq", Usage: "seq or rand"}},
//		Setup:    buildImage, // shared by all variants; its env reaches each Variant.Setup
//		Variants: []Variant{{Name: "read", Doc: "...", Setup: daxRead}, ...},
//		Report:   seedShapedTable, // optional extra section
//	}
//
// A Variant.Setup returns an [Op] whose Run(n) does n operations and
// nothing else; it returns an error wrapping [ErrSkip] (see [Skip]) to be
// left out with a note, as a variant that needs root does.
package bench
