//go:build !race

package iovfs_test

// raceEnabled is whether the tests run under -race.
const raceEnabled = false
