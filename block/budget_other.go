//go:build !linux

package block

// memReader knows no memory figures outside Linux.
type memReader struct{}

func (*memReader) read() (total, avail int64, ok bool) { return 0, 0, false }

// memInfo knows no memory figures outside Linux.
func memInfo() (total, avail int64, ok bool) { return 0, 0, false }
