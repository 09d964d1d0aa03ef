//go:build !race

package disk

const rwRace = false
