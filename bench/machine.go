package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine names the machine a run was measured on.
type Machine struct {
	// CPU is the model name from /proc/cpuinfo.
	CPU string `json:"cpu"`
	// Cores is the number of logical CPUs the process may use.
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	// Kernel is uname's system name and release, as "Linux 6.1.0".
	Kernel string `json:"kernel"`
}

// ThisMachine describes the machine the process runs on.
func ThisMachine() Machine {
	return Machine{
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Go:         runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		Kernel:     kernel(),
	}
}

func (m Machine) String() string {
	return fmt.Sprintf("%s, %d cores (GOMAXPROCS %d), %s %s/%s, %s", m.CPU, m.Cores, m.GOMAXPROCS, m.Go, m.GOOS, m.GOARCH, m.Kernel)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		// "model name" on x86, "Model" or "CPU part" elsewhere.
		switch strings.TrimSpace(k) {
		case "model name", "Model", "cpu model":
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func kernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown kernel"
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
}
