//go:build !linux

package block

// memInfo knows no memory figures outside Linux.
func memInfo() (total, avail int64, ok bool) { return 0, 0, false }
