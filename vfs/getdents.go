package vfs

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// maxDirents is how many entries one Getdents call returns at most.
const maxDirents = 4096

// Getdents returns the next entries of the directory open as fd, as
// getdents64(2) does: "." and ".." first (or where the file system puts
// them, for a DirIterator), then the file system's entries in a stable
// order. Each call continues where the last stopped; an empty result
// means the end. Seeking fd to 0 starts over. A descriptor that is not a
// directory gives ENOTDIR.
func (p *Proc) Getdents(fd int) ([]Dirent, error) {
	var out []Dirent
	err := p.readdir(fd, direntSink{
		room: func(*Dirent) bool { return len(out) < maxDirents },
		take: func(d Dirent) {
			if out == nil {
				out = make([]Dirent, 0, 8) // a listing's first call: grow once, not at 1, 2 and 4
			}
			out = append(out, d)
		},
		setOff: func(off int64) { out[len(out)-1].Off = off },
	})
	if err != nil && len(out) == 0 {
		return nil, err
	}
	return out, nil
}

// direntSize is the length of d's linux_dirent64 record: the 19-byte
// header, the name and its NUL, rounded up to 8 bytes.
func direntSize(d *Dirent) int { return (19 + len(d.Name) + 1 + 7) &^ 7 }

// Getdents64 is getdents64(2): it fills buf with linux_dirent64 records
// (d_ino, d_off, d_reclen, d_type, the name with a NUL) of the next
// entries of the directory open as fd, as many as fit, and returns the
// bytes used; 0 at the end. EINVAL when the next entry does not fit in
// buf at all. The records are the kernel's, byte for byte, for the same
// entries and positions.
func (p *Proc) Getdents64(fd int, buf []byte) (int, error) {
	n, last := 0, 0
	tooSmall := false
	err := p.readdir(fd, direntSink{
		room: func(d *Dirent) bool {
			if n+direntSize(d) > len(buf) {
				tooSmall = n == 0
				return false
			}
			return true
		},
		take: func(d Dirent) {
			sz := direntSize(&d)
			b := buf[n : n+sz]
			binary.LittleEndian.PutUint64(b[0:], d.Ino)
			binary.LittleEndian.PutUint64(b[8:], uint64(d.Off))
			binary.LittleEndian.PutUint16(b[16:], uint16(sz))
			b[18] = d.Type
			clear(b[19+copy(b[19:], d.Name):])
			last = n
			n += sz
		},
		setOff: func(off int64) { binary.LittleEndian.PutUint64(buf[last+8:], uint64(off)) },
	})
	if n > 0 {
		return n, nil
	}
	if err != nil {
		return 0, err
	}
	if tooSmall {
		return 0, errEINVAL
	}
	return 0, nil
}

// direntSink receives a listing: room reports whether the next entry fits
// after those taken, take takes it, and setOff sets the d_off of the last
// one taken (a DirIterator's entries learn theirs only when the next entry
// comes or the listing stops, as filldir64 writes it).
type direntSink struct {
	room   func(*Dirent) bool
	take   func(Dirent)
	setOff func(int64)
}

// readdir lists the directory open as fd from its position into s, and
// moves the position past what was taken.
func (p *Proc) readdir(fd int, s direntSink) error {
	f := p.files.get(fd)
	if f == nil || f.flags.Load()&unix.O_PATH != 0 {
		return errEBADF
	}
	if it, ok := f.h.(DirIterator); ok {
		f.posMu.Lock()
		defer f.posMu.Unlock()
		taken := false
		pos, err := it.Iterate(f.pos, func(pos int64, d Dirent) bool {
			if !s.room(&d) {
				return false
			}
			if taken {
				s.setOff(pos)
			}
			s.take(d)
			taken = true
			return true
		})
		if taken {
			s.setOff(pos)
		}
		f.pos = pos
		return err
	}
	rd, ok := f.node.(DirReader)
	if !ok {
		if isDir(f.node) {
			return nil
		}
		return errENOTDIR
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	put := func(d Dirent) bool {
		if !s.room(&d) {
			return false
		}
		s.take(d)
		return true
	}
	// Positions 0 and 1 are "." and ".."; after them the position is the
	// file system's cookie plus 2.
	if f.pos == 0 {
		st, _ := f.node.Stat()
		if !put(Dirent{Name: ".", Ino: st.Ino, Type: unix.DT_DIR, Off: 1}) {
			return nil
		}
		f.pos = 1
	}
	if f.pos == 1 {
		up := p.ns.parentOf(f.loc)
		st, _ := up.node.Stat()
		if !put(Dirent{Name: "..", Ino: st.Ino, Type: unix.DT_DIR, Off: 2}) {
			return nil
		}
		f.pos = 2
	}
	return rd.ReadDir(f.pos-2, func(d Dirent) bool {
		d.Off += 2
		if !put(d) {
			return false
		}
		f.pos = d.Off
		return true
	})
}
