//go:build !race

package ext4_test

const raceEnabled = false
