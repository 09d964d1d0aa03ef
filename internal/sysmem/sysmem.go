// Package sysmem says how much memory the process can have: the figures a
// size is checked against before memory is committed to it (a RAM disk, a
// dd buffer, a tmpfs limit), so that a request too large is refused with
// ENOMEM instead of ending the process with "runtime: out of memory".
package sysmem

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Total returns the memory the process may ever use: the machine's RAM,
// or its cgroup's memory.max if lower.
func Total() int64 {
	total := meminfo("MemTotal")
	if total <= 0 {
		var si syscall.Sysinfo_t
		if syscall.Sysinfo(&si) == nil {
			total = int64(si.Totalram) * int64(si.Unit)
		}
	}
	if lim, ok := cgroupLimit(); ok && (total <= 0 || lim < total) {
		total = lim
	}
	return total
}

// Available returns the memory the process can take now without the
// machine swapping or its cgroup reclaiming: MemAvailable, or what is left
// under the cgroup's memory.max if less.
func Available() int64 {
	avail := meminfo("MemAvailable")
	if avail <= 0 {
		var si syscall.Sysinfo_t
		if syscall.Sysinfo(&si) == nil {
			avail = int64(si.Freeram+si.Bufferram) * int64(si.Unit)
		}
	}
	if lim, ok := cgroupLimit(); ok {
		if cur := cgroupValue("memory.current"); cur >= 0 && lim-cur < avail {
			avail = max(lim-cur, 0)
		}
	}
	return avail
}

// Check returns nil if n bytes fit in the memory available now, and
// otherwise an error wrapping ENOMEM that says how much there is. what
// names the request ("a 100 GiB buffer").
func Check(n int64, what string) error {
	if n < 0 {
		return fmt.Errorf("%s: negative size: %w", what, syscall.EINVAL)
	}
	if avail := Available(); n > avail {
		return &Error{What: what, Size: n, Avail: avail}
	}
	return nil
}

// An Error is a request larger than the memory available.
type Error struct {
	What        string
	Size, Avail int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s needs %s, more than the %s of memory available", e.What, Size(e.Size), Size(e.Avail))
}

// Unwrap returns ENOMEM.
func (e *Error) Unwrap() error { return syscall.ENOMEM }

// Size formats n bytes for a message: "100 GiB", "512 MiB", "4096 bytes".
func Size(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	v, u := float64(n), -1
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[u])
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}

// meminfo returns a /proc/meminfo field in bytes, or -1.
func meminfo(field string) int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != field {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			return -1
		}
		n, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return -1
		}
		if len(fs) > 1 && fs[1] == "kB" {
			n *= 1024
		}
		return n
	}
	return -1
}

// cgroupLimit returns the process's cgroup v2 memory.max, if it has one.
func cgroupLimit() (int64, bool) {
	n := cgroupValue("memory.max")
	return n, n >= 0
}

// cgroupValue reads a number from a file of the process's cgroup v2
// directory; -1 if there is none ("max" included).
func cgroupValue(name string) int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return -1
	}
	// "0::/path" is cgroup v2's line.
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			v, err := os.ReadFile("/sys/fs/cgroup" + rest + "/" + name)
			if err != nil {
				return -1
			}
			n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}
