//go:build race

package tmpfs

// raceEnabled: under the race detector, readers take File.mu shared
// instead of the seqcount path, whose copies from pages that a writer may
// be changing are races by design (the seqcount throws their bytes away).
const raceEnabled = true
