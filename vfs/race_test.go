//go:build race

package vfs_test

// raceEnabled is true under -race, where tests shrink their loops.
const raceEnabled = true
