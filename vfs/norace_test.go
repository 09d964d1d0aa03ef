//go:build !race

package vfs_test

const raceEnabled = false
