//go:build !race

package disk

const raceDetector = false
