package fat

import (
	"syscall"
	"time"
)

// MaxFileSize is the largest file FAT holds (Linux's s_maxbytes).
const MaxFileSize = 0xffffffff

// fatTime is a FAT time stamp: DOS time and date, and the creation
// time's 10 ms units.
type fatTime struct {
	time, date uint16
	cs         byte
}

// toFAT converts t (UTC, as Linux with tz offset 0) to a FAT time stamp,
// clamped to 1980-01-01 ... 2107-12-31 23:59:58 (fat_time_unix2fat).
func toFAT(t time.Time) fatTime {
	t = t.UTC()
	if t.Year() < 1980 {
		return fatTime{0, 1<<5 | 1, 0}
	}
	if t.Year() > 2107 {
		return fatTime{23<<11 | 59<<5 | 29, 127<<9 | 12<<5 | 31, 199}
	}
	tm := uint16(t.Hour()<<11 | t.Minute()<<5 | t.Second()/2)
	d := uint16((t.Year()-1980)<<9 | int(t.Month())<<5 | t.Day())
	cs := byte((t.Second()&1)*100 + t.Nanosecond()/10_000_000)
	return fatTime{tm, d, cs}
}

// unix converts a FAT time stamp to a time (fat_time_fat2unix).
func (f fatTime) unix() time.Time {
	return fatDate(f.date, f.time, f.cs)
}

func fatDate(date, tm uint16, cs byte) time.Time {
	year := 1980 + int(date>>9)
	month := time.Month(max(1, min(12, int(date>>5&15))))
	day := max(1, int(date&31))
	sec := int(tm&31) * 2
	ns := 0
	if cs != 0 {
		sec += int(cs) / 100
		ns = int(cs%100) * 10_000_000
	}
	return time.Date(year, month, day, int(tm>>11), int(tm>>5&63), sec, ns, time.UTC)
}

// Stat is what a node reports.
type Stat struct {
	IsDir    bool
	Attr     byte
	Size     int64
	Clusters int64 // allocated clusters
	Nlink    int
	Mtime    time.Time
	Atime    time.Time
	Ctime    time.Time // creation time
	// Key identifies the node while its entry stays where it is (Linux's
	// i_pos); the root's is 0.
	Key uint64
}

// Stat returns n's attributes. A directory's size is its clusters' bytes
// and its link count 2 plus its subdirectories, as fat_fill_inode and
// fat_read_root count them.
func (v *Volume) Stat(n *Node) (Stat, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := Stat{IsDir: n.IsDir(), Attr: n.attr, Nlink: 1}
	if n.unlinked {
		s.Nlink = 0
	}
	cs, err := v.chainOf(n)
	if err != nil && !n.unlinked {
		return s, err
	}
	s.Clusters = int64(len(cs))
	if s.IsDir {
		if n.fixedRoot() {
			s.Size = int64(v.g.rootEntries * entrySize)
			cl := int64(v.g.clusterSize)
			s.Clusters = (s.Size + cl - 1) / cl // fat_read_root's i_blocks
		} else {
			s.Size = s.Clusters * int64(v.g.clusterSize)
		}
		if !n.unlinked {
			sub, err := v.subdirs(n)
			if err != nil {
				return s, err
			}
			s.Nlink = sub
			if n.root {
				s.Nlink += 2
			}
		}
	} else {
		s.Size = int64(n.size)
		s.Clusters = (s.Size + int64(v.g.clusterSize) - 1) / int64(v.g.clusterSize)
	}
	if !n.root {
		s.Mtime = n.mt.unix()
		s.Ctime = n.ct.unix()
		s.Atime = fatDate(n.adate, 0, 0)
		s.Key = uint64(n.dir.start)<<32 | uint64(n.off)
	} else {
		s.Mtime, s.Atime, s.Ctime = time.Unix(0, 0), time.Unix(0, 0), time.Unix(0, 0)
	}
	return s, nil
}

// ReadAt reads file n's bytes at off into p: the count, 0 at or past the
// end. A damaged chain gives EIO.
func (v *Volume) ReadAt(n *Node, p []byte, off int64) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n.IsDir() {
		return 0, syscall.EISDIR
	}
	if off < 0 {
		return 0, syscall.EINVAL
	}
	size := int64(n.size)
	if off >= size || len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > size-off {
		p = p[:size-off]
	}
	cs, err := v.chainOf(n)
	if err != nil {
		return 0, err
	}
	cl := int64(v.g.clusterSize)
	if int64(len(cs))*cl < size {
		return 0, syscall.EIO // the chain is shorter than the size
	}
	done := 0
	for done < len(p) {
		pos := off + int64(done)
		i := pos / cl
		in := pos % cl
		// A run of adjacent clusters is one read.
		j := i + 1
		for j < int64(len(cs)) && cs[j] == cs[j-1]+1 && (j-i)*cl-in < int64(len(p)-done) {
			j++
		}
		n := min(int64(len(p)-done), (j-i)*cl-in)
		if err := v.readDev(p[done:done+int(n)], v.g.clusterOff(cs[i])+in); err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, syscall.EIO
		}
		done += int(n)
	}
	return done, nil
}

// grow makes file n's chain hold at least size bytes, zero-filling the
// bytes from its current size to zeroTo (FAT has no holes:
// fat_cont_expand); a write zero-fills only the gap before its offset,
// since it writes the rest itself.
func (v *Volume) grow(n *Node, size, zeroTo int64) error {
	cs, err := v.chainOf(n)
	if err != nil {
		return err
	}
	cl := int64(v.g.clusterSize)
	need := int((size + cl - 1) / cl)
	if need > len(cs) {
		var last uint32
		if len(cs) > 0 {
			last = cs[len(cs)-1]
		}
		add, err := v.fat.alloc(need-len(cs), last)
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			n.start = add[0]
		}
		n.chain = append(cs, add...)
	}
	// Zero from the old size to the end of its cluster, and whole new
	// clusters up to size.
	old := int64(n.size)
	if zeroTo > old {
		if err := v.zero(n, old, zeroTo); err != nil {
			return err
		}
	}
	return nil
}

var zeros = make([]byte, 64<<10)

// writeData writes p, file data within one run of contiguous clusters,
// at dev, through the staged run (stage.go). When p ends inside a sector
// and nothing of the file follows it there (past is set: p reaches the
// end of the file), the sector's rest is written as zeros, as Linux
// writes a page of the page cache whole, so the device writes whole
// sectors and needs no read of the sector first.
func (v *Volume) writeData(p []byte, dev int64, past bool) error {
	bps := int64(v.g.bps)
	end := dev + int64(len(p))
	z := 0
	if part := end % bps; past && part != 0 && int64(len(p)) >= part {
		z = int(bps - part)
	}
	slack := end + int64(z)
	if past {
		// The rest of the last cluster holds nothing of the file.
		slack = v.g.dataStart + (end-v.g.dataStart+int64(v.g.clusterSize)-1)/int64(v.g.clusterSize)*int64(v.g.clusterSize)
	}
	return v.stageDataSlack(p, z, dev, max(slack, end+int64(z)))
}

// zero writes zeros over bytes [from, to) of file n, and on past to the
// end of its sector, which holds nothing of the file past to (the file
// is at most to bytes long, or a write of the bytes after to follows),
// so that the staged run ends on a sector boundary.
func (v *Volume) zero(n *Node, from, to int64) error {
	cl := int64(v.g.clusterSize)
	bps := int64(v.g.bps)
	to = (to + bps - 1) / bps * bps
	for from < to {
		i := from / cl
		in := from % cl
		k := min(to-from, cl-in, int64(len(zeros)))
		if err := v.stageData(nil, int(k), v.g.clusterOff(n.chain[i])+in); err != nil {
			return err
		}
		from += k
	}
	return nil
}

// WriteAt writes p into file n at off, growing it as needed; the count
// is short only for lack of space (ENOSPC when nothing fits) or at the
// 4 GiB limit (EFBIG when nothing fits). now is the modification time.
func (v *Volume) WriteAt(n *Node, p []byte, off int64, now time.Time) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.writeAt(n, p, off, now)
}

// Append writes p at the end of file n, atomically with other writes,
// and returns where it landed and the count.
func (v *Volume) Append(n *Node, p []byte, now time.Time) (int64, int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	off := int64(n.size)
	c, err := v.writeAt(n, p, off, now)
	return off, c, err
}

func (v *Volume) writeAt(n *Node, p []byte, off int64, now time.Time) (int, error) {
	if err := v.writable(); err != nil {
		return 0, err
	}
	if n.IsDir() {
		return 0, syscall.EISDIR
	}
	if off < 0 {
		return 0, syscall.EINVAL
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= MaxFileSize {
		return 0, syscall.EFBIG
	}
	if int64(len(p)) > MaxFileSize-off {
		p = p[:MaxFileSize-off]
	}
	end := off + int64(len(p))
	if err := v.grow(n, end, off); err == syscall.ENOSPC {
		// Write what the free clusters hold (a short write).
		cl := int64(v.g.clusterSize)
		have := int64(len(n.chain))*cl + int64(v.fat.free)*cl
		if have <= off {
			return 0, v.done(syscall.ENOSPC)
		}
		end = have
		p = p[:end-off]
		if err := v.grow(n, end, off); err != nil {
			return 0, v.done(err)
		}
	} else if err != nil {
		return 0, v.done(err)
	}
	cl := int64(v.g.clusterSize)
	cs := n.chain
	done := 0
	oldSize := max(int64(n.size), off)
	for done < len(p) {
		pos := off + int64(done)
		i := pos / cl
		in := pos % cl
		j := i + 1
		for j < int64(len(cs)) && cs[j] == cs[j-1]+1 && (j-i)*cl-in < int64(len(p)-done) {
			j++
		}
		k := min(int64(len(p)-done), (j-i)*cl-in)
		if err := v.writeData(p[done:done+int(k)], v.g.clusterOff(cs[i])+in, pos+k >= oldSize); err != nil {
			break
		}
		done += int(k)
	}
	if off+int64(done) > int64(n.size) {
		n.size = uint32(off + int64(done))
	}
	t := toFAT(now)
	n.mt, n.adate = t, t.date
	n.attr |= AttrArch
	err := v.writeEntry(n)
	if done == 0 {
		return 0, v.done(syscall.EIO)
	}
	return done, v.done(err)
}

// Truncate sets file n's size: shrinking frees the clusters past it,
// growing allocates and zero-fills (EFBIG past MaxFileSize).
func (v *Volume) Truncate(n *Node, size int64, now time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.writable(); err != nil {
		return err
	}
	if n.IsDir() {
		return syscall.EISDIR
	}
	if size < 0 {
		return syscall.EINVAL
	}
	if size > MaxFileSize {
		return syscall.EFBIG
	}
	if size > int64(n.size) {
		if err := v.grow(n, size, size); err != nil {
			return v.done(err)
		}
	} else {
		cs, err := v.chainOf(n)
		if err != nil {
			return err
		}
		cl := int64(v.g.clusterSize)
		keep := int((size + cl - 1) / cl)
		if keep < len(cs) {
			if keep == 0 {
				n.start = 0
			} else {
				v.fat.set(cs[keep-1], eocMark)
			}
			v.fat.freeChain(cs[keep:])
			n.chain = cs[:keep]
		}
	}
	n.size = uint32(size)
	t := toFAT(now)
	n.mt, n.adate = t, t.date
	n.attr |= AttrArch
	return v.done(v.writeEntry(n))
}

// SetTimes sets n's access and modification times (either may be nil):
// the modification time to 2 s, the access date to the day.
func (v *Volume) SetTimes(n *Node, atime, mtime *time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.writable(); err != nil {
		return err
	}
	if n.root {
		return nil
	}
	if mtime != nil {
		n.mt = toFAT(*mtime)
		n.mt.cs = 0
	}
	if atime != nil {
		n.adate = toFAT(*atime).date
	}
	return v.done(v.writeEntry(n))
}

// SetAttr sets n's attribute bits (read-only, hidden, system, archive);
// the directory bit stays as it is.
func (v *Volume) SetAttr(n *Node, attr byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.writable(); err != nil {
		return err
	}
	if n.root {
		return nil
	}
	n.attr = n.attr&AttrDir | attr&(AttrRO|AttrHidden|AttrSys|AttrArch)
	return v.done(v.writeEntry(n))
}
