package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcLock is one held lock as /proc/locks lists it.
type ProcLock struct {
	Class string // FLOCK, POSIX, OFDLCK, LEASE...
	Mode  string // ADVISORY or MANDATORY
	Type  string // READ or WRITE
	Pid   int
	Major uint32
	Minor uint32
	Ino   uint64
	Line  string // as /proc/locks gives it
}

// ProcLocks returns the locks the kernel holds, as /proc/locks lists them
// (fs/locks.c lock_get_status: "N: CLASS MODE TYPE PID MAJ:MIN:INO START
// END", the device numbers in hex); the lines of blocked waiters ("->")
// are left out.
func ProcLocks() ([]ProcLock, error) {
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil, err
	}
	var out []ProcLock
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[1] == "->" {
			continue
		}
		l := ProcLock{Class: f[1], Mode: f[2], Type: f[3], Line: line}
		if l.Pid, err = strconv.Atoi(f[4]); err != nil {
			return nil, fmt.Errorf("/proc/locks: %q: %v", line, err)
		}
		id := strings.Split(f[5], ":")
		if len(id) != 3 {
			return nil, fmt.Errorf("/proc/locks: %q: no MAJ:MIN:INO", line)
		}
		ma, err1 := strconv.ParseUint(id[0], 16, 32)
		mi, err2 := strconv.ParseUint(id[1], 16, 32)
		ino, err3 := strconv.ParseUint(id[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("/proc/locks: %q: bad MAJ:MIN:INO", line)
		}
		l.Major, l.Minor, l.Ino = uint32(ma), uint32(mi), ino
		out = append(out, l)
	}
	return out, nil
}
