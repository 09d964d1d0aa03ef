//go:build !race

package iovfs_test

const raceEnabled = false
