//go:build race

package disk

// rwRace sizes the Writer differential loops under -race.
const rwRace = true
