//go:build race

package iovfs_test

// raceEnabled is whether the tests run under -race, which makes the
// differential tests several times slower: they run fewer sequences.
const raceEnabled = true
