//go:build race

package overlay_test

// raceOn: the race detector makes the kernel differentials and trials
// several times slower, so they run a smaller sample under it.
const raceOn = true
