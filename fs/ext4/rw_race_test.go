//go:build race

package ext4

// rwRace sizes the Writer differential loops under -race.
const rwRace = true
