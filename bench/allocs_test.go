package bench

// allocates reports whether a variant's allocations per operation mean
// its path allocates. The counters bench reads are the whole process's
// (runtime.MemStats), so a rare count also comes from the runtime and
// from goroutines earlier tests left winding down; a path that allocates
// does so on every operation, or at least on one in a hundred (a pooled
// buffer refilled, a slice grown by doubling from a small size).
func allocates(perOp float64) bool { return perOp >= 0.01 }
