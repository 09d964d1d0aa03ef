//go:build !race

package ext4

const raceDetector = false
