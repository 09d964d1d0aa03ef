//go:build !race

package tmpfs

// raceEnabled is false: readers take the seqcount path (see File.seq).
const raceEnabled = false
