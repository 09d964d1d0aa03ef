// Package notice carries the warnings of drivers (a journal replayed, a
// volume mounted with errors, an orphan cleanup skipped) to the program
// that embeds iovfs, as the kernel's printk carries them to its log.
//
// A driver never writes to the process's standard error or to the log
// package: it calls Printf. A program that wants the notices installs a
// handler with SetHandler; without one they are dropped. The iovfs command
// prints them as "iovfs CMD: warning: ...", naming the image the user gave
// rather than the device the driver saw.
package notice

import (
	"fmt"
	"sync"
)

// A Notice is one warning of a driver.
type Notice struct {
	// Driver names the driver ("ext4").
	Driver string
	// Source is the device or source the driver was given, as in
	// MountRequest.Source ("/dev/loop0").
	Source string
	// Msg is the warning, one line without a trailing newline.
	Msg string
}

// String formats n as "driver (source): msg".
func (n Notice) String() string {
	if n.Source == "" {
		return n.Driver + ": " + n.Msg
	}
	return n.Driver + " (" + n.Source + "): " + n.Msg
}

// mu protects handler.
var (
	mu      sync.RWMutex
	handler func(Notice)
)

// SetHandler makes h receive every notice posted from now on, and returns
// the handler it replaces (nil for none). h may be called from any
// goroutine, and concurrently; nil drops notices.
func SetHandler(h func(Notice)) (old func(Notice)) {
	mu.Lock()
	defer mu.Unlock()
	old, handler = handler, h
	return old
}

// Post delivers n to the handler, if one is installed.
func Post(n Notice) {
	mu.RLock()
	h := handler
	mu.RUnlock()
	if h != nil {
		h(n)
	}
}

// Printf posts a notice of driver about source, its message formatted as
// fmt.Sprintf does.
func Printf(driver, source, format string, args ...any) {
	mu.RLock()
	h := handler
	mu.RUnlock()
	if h != nil {
		h(Notice{Driver: driver, Source: source, Msg: fmt.Sprintf(format, args...)})
	}
}
