//go:build !race

package overlay_test

const raceOn = false
