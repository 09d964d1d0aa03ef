package vfs

import (
	"sort"
	"strings"
)

// MountInfo describes one mount as a line of /proc/mounts shows it.
type MountInfo struct {
	Source, Target, FSType string
	// Options are the mount's options: "rw" or "ro", then the data
	// given to Mount.
	Options string
}

// Mounts lists the namespace's attached mounts in the order they were
// made, the root first. A mount made by MountFS (set-up code, no type
// name) shows the type and source "none", unless its file system has a
// FSType method.
func (ns *Namespace) Mounts() []MountInfo {
	ns.mu.Lock()
	t := *ns.mounts.Load()
	ms := []*mount{ns.root}
	for _, m := range t {
		ms = append(ms, m)
	}
	info := make(map[*mount][3]string, len(ms))
	for _, m := range ms {
		info[m] = [3]string{m.source, m.fstype, m.data}
	}
	ns.mu.Unlock()
	sort.Slice(ms[1:], func(i, j int) bool { return ms[1+i].dev < ms[1+j].dev })
	out := make([]MountInfo, 0, len(ms))
	for _, m := range ms {
		target := "/"
		if m.parent != nil {
			tp := &Proc{ns: ns}
			tp.cwd.Store(&location{m.parent, m.point})
			var err error
			if target, err = tp.Getcwd(); err != nil {
				continue
			}
		}
		in := info[m]
		mi := MountInfo{Source: in[0], Target: target, FSType: in[1], Options: "rw"}
		if m.readonly {
			mi.Options = "ro"
		}
		if in[2] != "" {
			mi.Options += "," + in[2]
		}
		if mi.FSType == "" {
			mi.FSType = "none"
			if n, ok := m.fs.(interface{ FSType() string }); ok {
				mi.FSType = n.FSType()
			}
		}
		if mi.Source == "" {
			mi.Source = "none"
		}
		mi.Options = strings.TrimSuffix(mi.Options, ",")
		out = append(out, mi)
	}
	return out
}
