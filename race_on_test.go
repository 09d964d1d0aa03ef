//go:build race

package iovfs_test

// raceEnabled lets tests size their loops for the race detector.
const raceEnabled = true
