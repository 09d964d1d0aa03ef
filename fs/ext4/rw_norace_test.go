//go:build !race

package ext4

const rwRace = false
