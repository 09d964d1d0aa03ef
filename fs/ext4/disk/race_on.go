//go:build race

package disk

// raceEnabled: under the race detector, reads beside a Writer take its
// lock instead of the sequence-count path (live.go).
const raceEnabled = true
