//go:build race

package ext4_test

// raceEnabled: the race detector makes the walks 5-10x slower, so the
// corpus test bounds them more tightly and does not time them.
const raceEnabled = true
