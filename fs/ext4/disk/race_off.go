//go:build !race

package disk

// raceEnabled is false: reads beside a Writer take no lock (live.go).
const raceEnabled = false
