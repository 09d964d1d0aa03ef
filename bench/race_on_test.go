//go:build race

package bench

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// the pooled sector buffers of unaligned block I/O allocate under -race.
const raceEnabled = true
