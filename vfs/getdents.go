package vfs

import "golang.org/x/sys/unix"

// maxDirents is how many entries one Getdents call returns at most.
const maxDirents = 4096

// Getdents returns the next entries of the directory open as fd, as
// getdents64(2) does: "." and ".." first, then the file system's entries
// in a stable order. Each call continues where the last stopped; an empty
// result means the end. Seeking fd to 0 starts over. A descriptor that is
// not a directory gives ENOTDIR.
func (p *Proc) Getdents(fd int) ([]Dirent, error) {
	f := p.files.get(fd)
	if f == nil || f.flags.Load()&unix.O_PATH != 0 {
		return nil, errEBADF
	}
	rd, ok := f.node.(DirReader)
	if !ok {
		if isDir(f.node) {
			return nil, nil
		}
		return nil, errENOTDIR
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	var out []Dirent
	// Positions 0 and 1 are "." and ".."; after them the position is the
	// file system's cookie plus 2.
	if f.pos < 2 {
		out = make([]Dirent, 0, 8) // a listing's first call: grow once, not at 1, 2 and 4
	}
	if f.pos == 0 {
		st, _ := f.node.Stat()
		out = append(out, Dirent{Name: ".", Ino: st.Ino, Type: unix.DT_DIR, Off: 1})
		f.pos = 1
	}
	if f.pos == 1 {
		up := p.ns.parentOf(f.loc)
		st, _ := up.node.Stat()
		out = append(out, Dirent{Name: "..", Ino: st.Ino, Type: unix.DT_DIR, Off: 2})
		f.pos = 2
	}
	err := rd.ReadDir(f.pos-2, func(d Dirent) bool {
		d.Off += 2
		out = append(out, d)
		f.pos = d.Off
		return len(out) < maxDirents
	})
	if err != nil && len(out) == 0 {
		return nil, err
	}
	return out, nil
}
