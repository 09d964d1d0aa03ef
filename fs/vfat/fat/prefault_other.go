//go:build !linux

package fat

func prefault(b []byte) {}
