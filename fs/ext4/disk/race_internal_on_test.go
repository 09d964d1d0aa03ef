//go:build race

package disk

// raceDetector is whether the internal tests run under -race, which makes
// walks 5-10x slower (and more on a loaded machine): hang guards widen.
const raceDetector = true
