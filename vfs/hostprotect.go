package vfs

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// HostLinkProtection reads the host's fs.protected_* settings from
// /proc/sys/fs, through descriptors kept open so that each Read costs four
// preads: an export uses it as its namespace's source
// (SetLinkProtectionFunc), since the host kernel applies the host's
// settings before a request reaches the export, and the export must decide
// as it does.
type HostLinkProtection struct {
	files [4]*os.File

	mu   sync.Mutex // guards last
	last LinkProtection
}

var hostProtectionFiles = [4]string{"protected_symlinks", "protected_hardlinks", "protected_fifos", "protected_regular"}

// OpenHostLinkProtection opens the host's settings and reads them once.
func OpenHostLinkProtection() (*HostLinkProtection, error) {
	h := new(HostLinkProtection)
	for i, name := range hostProtectionFiles {
		f, err := os.Open("/proc/sys/fs/" + name)
		if err != nil {
			h.Close()
			return nil, err
		}
		h.files[i] = f
	}
	if _, err := h.read(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Read returns the host's settings now; if one cannot be read it returns
// the settings last read.
func (h *HostLinkProtection) Read() LinkProtection {
	lp, err := h.read()
	if err != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.last
	}
	return lp
}

func (h *HostLinkProtection) read() (LinkProtection, error) {
	var v [4]int
	var buf [16]byte
	for i, f := range h.files {
		n, err := f.ReadAt(buf[:], 0)
		if n == 0 {
			return LinkProtection{}, err
		}
		if v[i], err = strconv.Atoi(strings.TrimSpace(string(buf[:n]))); err != nil {
			return LinkProtection{}, err
		}
	}
	lp := LinkProtection{Symlinks: v[0], Hardlinks: v[1], FIFOs: v[2], Regular: v[3]}
	h.mu.Lock()
	h.last = lp
	h.mu.Unlock()
	return lp, nil
}

// Close closes the descriptors.
func (h *HostLinkProtection) Close() error {
	for _, f := range h.files {
		if f != nil {
			f.Close()
		}
	}
	return nil
}
