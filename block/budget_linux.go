package block

import (
	"bytes"
	"os"
	"strconv"
)

// memInfo returns the machine's physical memory and the memory available
// for new use without swapping (MemTotal and MemAvailable of
// /proc/meminfo, in bytes).
func memInfo() (total, avail int64, ok bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, false
	}
	field := func(name string) (int64, bool) {
		i := bytes.Index(b, []byte("\n"+name+":"))
		if i < 0 && bytes.HasPrefix(b, []byte(name+":")) {
			i = -1
		} else if i < 0 {
			return 0, false
		}
		rest := b[i+1+len(name)+1:]
		if e := bytes.IndexByte(rest, '\n'); e >= 0 {
			rest = rest[:e]
		}
		f := bytes.Fields(rest) // "NNN kB"
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || n < 0 || n > 1<<53 {
			return 0, false
		}
		return n << 10, true
	}
	total, ok1 := field("MemTotal")
	avail, ok2 := field("MemAvailable")
	return total, avail, ok1 && ok2 && total > 0
}
