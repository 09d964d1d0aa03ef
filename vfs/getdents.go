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
	c, err := p.readdir(fd, nil)
	if err != nil && len(c.out) == 0 {
		return nil, err
	}
	return c.out, nil
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
	c, err := p.readdir(fd, buf)
	switch {
	case c.n > 0:
		return c.n, nil
	case err != nil:
		return 0, err
	case c.tooSmall:
		return 0, errEINVAL
	}
	return 0, nil
}

// DirContext receives a DirIterator's entries (Linux's struct
// dir_context with filldir64): into getdents64 records in a caller's
// buffer, or into a slice of Dirents.
type DirContext struct {
	bytes    bool     // records into buf, else Dirents into out
	buf      []byte   // getdents64's buffer
	n, last  int      // bytes used; the last record's offset
	out      []Dirent // Getdents' result
	taken    bool     // an entry was taken: its d_off is set by the next Emit or the end
	tooSmall bool     // the first entry did not fit
}

// Emit offers entry d, reported at position pos (ctx->pos): false when it
// does not fit (the listing stops before it). The entry taken before it
// gets pos as its d_off.
func (c *DirContext) Emit(pos int64, d Dirent) bool {
	if !c.room(&d) {
		return false
	}
	if c.taken {
		c.setOff(pos)
	}
	d.Off = pos // until the next entry or the end sets it
	c.take(d)
	c.taken = true
	return true
}

func (c *DirContext) room(d *Dirent) bool {
	if !c.bytes {
		return len(c.out) < maxDirents
	}
	if c.n+direntSize(d) > len(c.buf) {
		c.tooSmall = c.n == 0
		return false
	}
	return true
}

func (c *DirContext) take(d Dirent) {
	if !c.bytes {
		if c.out == nil {
			c.out = make([]Dirent, 0, 8) // a listing's first call: grow once, not at 1, 2 and 4
		}
		c.out = append(c.out, d)
		return
	}
	sz := direntSize(&d)
	b := c.buf[c.n : c.n+sz]
	binary.LittleEndian.PutUint64(b[0:], d.Ino)
	binary.LittleEndian.PutUint64(b[8:], uint64(d.Off))
	binary.LittleEndian.PutUint16(b[16:], uint16(sz))
	b[18] = d.Type
	clear(b[19+copy(b[19:], d.Name):])
	c.last = c.n
	c.n += sz
}

// setOff sets the d_off of the last entry taken.
func (c *DirContext) setOff(off int64) {
	if !c.bytes {
		c.out[len(c.out)-1].Off = off
		return
	}
	binary.LittleEndian.PutUint64(c.buf[c.last+8:], uint64(off))
}

// readdir lists the directory open as fd from its position, into
// getdents64 records in buf or, with buf nil, into Dirents, and moves the
// position past what was taken. The result is the file's context: read
// it before the next call on the file.
func (p *Proc) readdir(fd int, buf []byte) (DirContext, error) {
	f := p.files.get(fd)
	if f == nil || f.flags.Load()&unix.O_PATH != 0 {
		return DirContext{}, errEBADF
	}
	c := DirContext{bytes: buf != nil, buf: buf}
	if removedDir(f.node) {
		return c, errENOENT // iterate_dir: IS_DEADDIR
	}
	if it, ok := f.h.(DirIterator); ok {
		f.posMu.Lock()
		defer f.posMu.Unlock()
		f.dctx = c
		pos, err := it.Iterate(f.pos, &f.dctx)
		if f.dctx.taken {
			f.dctx.setOff(pos)
		}
		f.pos = pos
		c = f.dctx
		f.dctx = DirContext{} // drop the caller's buffer
		return c, err
	}
	return p.readdirFS(f, c)
}

// readdirFS is readdir for a file system's DirReader: the VFS adds "."
// and "..", and positions after them are the file system's cookies plus
// 2.
func (p *Proc) readdirFS(f *file, c DirContext) (DirContext, error) {
	rd, ok := f.node.(DirReader)
	if !ok {
		if isDir(f.node) {
			return c, nil
		}
		return c, errENOTDIR
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	put := func(d Dirent) bool {
		if !c.room(&d) {
			return false
		}
		c.take(d)
		return true
	}
	if f.pos == 0 {
		st, _ := f.node.Stat()
		if !put(Dirent{Name: ".", Ino: st.Ino, Type: unix.DT_DIR, Off: 1}) {
			return c, nil
		}
		f.pos = 1
	}
	if f.pos == 1 {
		up := p.ns.parentOf(f.loc)
		st, _ := up.node.Stat()
		if !put(Dirent{Name: "..", Ino: st.Ino, Type: unix.DT_DIR, Off: 2}) {
			return c, nil
		}
		f.pos = 2
	}
	full := false
	dp, _ := rd.(DirPositioner)
	fn := func(d Dirent) bool {
		at := d
		d.Off += 2
		if !put(d) {
			full = true
			if dp != nil {
				if pos, ok := dp.DirAt(at); ok {
					f.pos = pos + 2
				}
			}
			return false
		}
		f.pos = d.Off
		return true
	}
	var err error
	if ar, ok := rd.(AtimeDirReader); ok && f.mnt != nil {
		mode := f.mnt.atime.Mode(true)
		if f.flags.Load()&unix.O_NOATIME != 0 {
			mode = AtimeNever // file_accessed
		}
		err = ar.ReadDirAtime(f.pos-2, mode, fn)
	} else {
		err = rd.ReadDir(f.pos-2, fn)
	}
	if dp != nil && err == nil && !full {
		f.pos = dp.DirEnd() + 2
	}
	return c, err
}
