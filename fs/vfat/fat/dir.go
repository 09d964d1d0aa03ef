package fat

// Directories: a directory's bytes are read once and kept with its Node
// (at most 2 MiB, FAT_MAX_DIR_SIZE); changes are written to the cache
// and the device together.

import (
	"encoding/binary"
	"syscall"
	"unicode/utf16"
)

const (
	entrySize   = 32
	deletedFlag = 0xe5
	maxDirSize  = 65536 * entrySize // FAT_MAX_DIR_SIZE
)

// entry is one parsed directory entry: the short entry and the long name
// before it, if any.
type entry struct {
	name    string // as listed: the long name, else the alias
	short   [11]byte
	hasLong bool
	first   int // offset of the first slot (a long-name slot or the short entry)
	off     int // offset of the short entry
	raw     []byte
}

func (e *entry) start(b32 bool) uint32 {
	s := uint32(binary.LittleEndian.Uint16(e.raw[26:]))
	if b32 {
		s |= uint32(binary.LittleEndian.Uint16(e.raw[20:])) << 16
	}
	return s
}

// loadDir reads the bytes of directory n.
func (v *Volume) loadDir(n *Node) error {
	if n.data != nil {
		return nil
	}
	if n.fixedRoot() {
		b := make([]byte, v.g.rootEntries*entrySize)
		if err := v.readDev(b, v.g.rootStart); err != nil {
			return err
		}
		n.data = b
		return nil
	}
	cs, err := v.chainOf(n)
	if err != nil {
		return err
	}
	if len(cs) == 0 || int64(len(cs))*int64(v.g.clusterSize) > maxDirSize+int64(v.g.clusterSize) {
		return syscall.EIO
	}
	b := make([]byte, len(cs)*v.g.clusterSize)
	if err := v.readClusters(cs, b); err != nil {
		return err
	}
	n.data = b
	return nil
}

// readClusters reads the clusters cs into b, a run of adjacent clusters
// at a time.
func (v *Volume) readClusters(cs []uint32, b []byte) error {
	cl := v.g.clusterSize
	for i := 0; i < len(cs); {
		j := i + 1
		for j < len(cs) && cs[j] == cs[j-1]+1 {
			j++
		}
		if err := v.readDev(b[i*cl:j*cl], v.g.clusterOff(cs[i])); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// devOff returns the device offset of byte off of directory n.
func (v *Volume) devOff(n *Node, off int) int64 {
	if n.fixedRoot() {
		return v.g.rootStart + int64(off)
	}
	cl := v.g.clusterSize
	return v.g.clusterOff(n.chain[off/cl]) + int64(off%cl)
}

// writeDir records that bytes [lo, hi) of directory n's cache changed.
// They reach the device whole sectors at a time at the next sync
// (flushDirs), as Linux's vfat leaves a directory's buffers dirty for
// writeback: a change of an entry costs no I/O, and entries changed
// together are written once. The volume's mutex is held.
func (v *Volume) writeDir(n *Node, lo, hi int) error {
	if hi <= lo {
		return nil
	}
	bps := v.g.bps
	last := (hi - 1) / bps
	for len(n.dirty)*64 <= last {
		n.dirty = append(n.dirty, 0)
	}
	for s := lo / bps; s <= last; s++ {
		n.dirty[s/64] |= 1 << (s % 64)
	}
	if v.dirtyDirs == nil {
		v.dirtyDirs = map[*Node]struct{}{}
	}
	v.dirtyDirs[n] = struct{}{}
	return nil
}

// flushDirs writes the staged file data, then the changed sectors of
// every directory to the device, runs of adjacent sectors in one write
// as far as the directory's clusters are contiguous.
func (v *Volume) flushDirs() error {
	if err := v.flushData(); err != nil {
		return err
	}
	for n := range v.dirtyDirs {
		if err := v.flushDir(n); err != nil {
			return err
		}
		delete(v.dirtyDirs, n)
	}
	return nil
}

func (v *Volume) flushDir(n *Node) error {
	bps := v.g.bps
	sectors := len(n.dirty) * 64
	for s := 0; s < sectors; {
		if n.dirty[s/64] == 0 {
			s = (s/64 + 1) * 64
			continue
		}
		if n.dirty[s/64]&(1<<(s%64)) == 0 {
			s++
			continue
		}
		e := s + 1
		for e < sectors && n.dirty[e/64]&(1<<(e%64)) != 0 {
			e++
		}
		if err := v.writeDirNow(n, s*bps, min(e*bps, len(n.data))); err != nil {
			return err
		}
		s = e
	}
	clear(n.dirty)
	return nil
}

// forgetDir drops the changes of a directory whose clusters are freed:
// written later, they would land in another file's clusters.
func (v *Volume) forgetDir(n *Node) {
	delete(v.dirtyDirs, n)
	n.dirty = nil
}

// writeDirNow writes bytes [lo, hi) of directory n's cache to the device.
func (v *Volume) writeDirNow(n *Node, lo, hi int) error {
	for lo < hi {
		end := hi
		if !n.fixedRoot() {
			cl := v.g.clusterSize
			// As far as the clusters are contiguous.
			end = min(hi, (lo/cl+1)*cl)
			for end < hi && n.chain[end/cl] == n.chain[end/cl-1]+1 {
				end = min(hi, end+cl)
			}
		}
		if _, err := v.dev.WriteAt(n.data[lo:end], v.devOff(n, lo)); err != nil {
			return syscall.EIO
		}
		lo = end
	}
	return nil
}

// entries calls fn for each entry of directory n from byte offset from,
// in order, skipping free slots, volume labels, "." and "..", until fn
// returns false. Long names whose slots are out of order or whose
// checksum does not match the alias are ignored, as fat_parse_long does.
func (v *Volume) entries(n *Node, from int, fn func(e *entry) bool) error {
	if err := v.loadDir(n); err != nil {
		return err
	}
	d := n.data
	var lfn []uint16
	lfnFirst, want, sum := -1, 0, byte(0)
	for off := from &^ (entrySize - 1); off+entrySize <= len(d); off += entrySize {
		s := d[off : off+entrySize]
		if s[0] == 0 || s[0] == deletedFlag {
			lfnFirst = -1
			continue
		}
		if s[11] == attrLFN {
			id := int(s[0])
			if id&0x40 != 0 {
				id &^= 0x40
				if id == 0 || id > 20 {
					lfnFirst = -1
					continue
				}
				lfn = make([]uint16, id*13)
				lfnFirst, want, sum = off, id, s[13]
			} else if lfnFirst < 0 || id != want || s[13] != sum {
				lfnFirst = -1
				continue
			}
			if lfnFirst >= 0 {
				p := lfn[(id-1)*13:]
				for i := range 5 {
					p[i] = binary.LittleEndian.Uint16(s[1+2*i:])
				}
				for i := range 6 {
					p[5+i] = binary.LittleEndian.Uint16(s[14+2*i:])
				}
				for i := range 2 {
					p[11+i] = binary.LittleEndian.Uint16(s[28+2*i:])
				}
				want = id - 1
			}
			continue
		}
		if s[11]&AttrVolume != 0 {
			lfnFirst = -1
			continue
		}
		var e entry
		copy(e.short[:], s[:11])
		e.off, e.first, e.raw = off, off, s
		if lfnFirst >= 0 && want == 0 && checksum(e.short) == sum {
			end := 0
			for end < len(lfn) && lfn[end] != 0 {
				end++
			}
			if end > 0 {
				e.name, e.hasLong, e.first = string(utf16.Decode(lfn[:end])), true, lfnFirst
			}
		}
		lfnFirst = -1
		if !e.hasLong {
			if e.short == dotName || e.short == dotdotName {
				continue
			}
			e.name = displayShort(e.short, s[12])
			if e.name == "" {
				continue
			}
		}
		if !fn(&e) {
			return nil
		}
	}
	return nil
}

var (
	dotName    = [11]byte{'.', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '}
	dotdotName = [11]byte{'.', '.', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '}
)

// fold is a name as lookups compare it (vfat_cmpi with an ASCII or
// UTF-8 I/O charset): trailing dots stripped, ASCII letters in upper
// case.
func fold(name string) string {
	b := []byte(stripTail(name))
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

// indexed is what a directory's name index keeps of an entry.
type indexed struct {
	first, off int
	name       string
	hasLong    bool
}

// buildIndex makes n's name index: every long name and alias, folded,
// mapped to the first entry (in disk order) that has it, as a scan
// would find it.
func (v *Volume) buildIndex(n *Node) error {
	idx := map[string]indexed{}
	err := v.entries(n, 0, func(e *entry) bool {
		x := indexed{e.first, e.off, e.name, e.hasLong}
		if _, dup := idx[fold(e.name)]; !dup {
			idx[fold(e.name)] = x
		}
		if e.hasLong {
			if a := fold(displayShort(e.short, e.raw[12])); a != "" {
				if _, dup := idx[a]; !dup {
					idx[a] = x
				}
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	n.index = idx
	return nil
}

// indexAdd adds the entry whose short entry is at off to n's index, if
// it has one.
func (v *Volume) indexAdd(n *Node, first, off int) {
	if n.index == nil {
		return
	}
	var added bool
	v.entries(n, first, func(e *entry) bool {
		if e.off != off {
			return e.off < off
		}
		x := indexed{e.first, e.off, e.name, e.hasLong}
		keys := []string{fold(e.name)}
		if e.hasLong {
			keys = append(keys, fold(displayShort(e.short, e.raw[12])))
		}
		for _, k := range keys {
			if old, dup := n.index[k]; dup && old.off < off {
				continue
			}
			n.index[k] = x
		}
		added = true
		return false
	})
	if !added {
		n.index = nil
	}
}

// find looks name up in directory n (fat_search_long): it matches the
// long name or the alias as listed, through the directory's index.
func (v *Volume) find(n *Node, name string) (*entry, error) {
	if n.index == nil {
		if err := v.buildIndex(n); err != nil {
			return nil, err
		}
	}
	x, ok := n.index[fold(name)]
	if !ok {
		return nil, syscall.ENOENT
	}
	e := &entry{name: x.name, hasLong: x.hasLong, first: x.first, off: x.off, raw: n.data[x.off : x.off+entrySize]}
	copy(e.short[:], e.raw[:11])
	return e, nil
}

// aliasTaken reports whether a short entry of n has the alias s, as
// fat_scan's walk of the whole directory finds, through the directory's
// count of short entries per alias (built at the first call, kept by
// addSlots and removeSlots).
func (v *Volume) aliasTaken(n *Node, s [11]byte) bool {
	if n.aliases == nil {
		n.aliases = map[[11]byte]int32{}
		d := n.data
		for off := 0; off+entrySize <= len(d); off += entrySize {
			if e := d[off : off+entrySize]; isShortEntry(e) {
				n.aliases[[11]byte(e[:11])]++
			}
		}
	}
	return n.aliases[s] > 0
}

// isShortEntry reports whether slot e is a short entry that fat_scan
// compares: in use, neither a long-name slot nor a volume label.
func isShortEntry(e []byte) bool {
	return e[0] != 0 && e[0] != deletedFlag && e[11] != attrLFN && e[11]&AttrVolume == 0
}

// addSlots writes the slots into the first run of free slots of n that
// can hold them, growing the directory by zeroed clusters when none can
// (fat_add_entries), and returns the offset of the first.
func (v *Volume) addSlots(n *Node, slots []byte) (int, error) {
	if err := v.loadDir(n); err != nil {
		return 0, err
	}
	need := len(slots) / entrySize
	// The first run of free slots that fits, searched from the first
	// free slot (freeHint: none lies before it), as a search from the
	// start finds it.
	run, at, firstFree := 0, -1, -1
	for off := min(n.freeHint, len(n.data)); off+entrySize <= len(n.data); off += entrySize {
		if c := n.data[off]; c == 0 || c == deletedFlag {
			if firstFree < 0 {
				firstFree = off
			}
			if run == 0 {
				at = off
			}
			if run++; run == need {
				break
			}
		} else {
			run = 0
		}
	}
	if run < need {
		if n.fixedRoot() {
			return 0, syscall.ENOSPC
		}
		if run == 0 {
			at = len(n.data)
		}
		missing := (need - run) * entrySize
		cl := v.g.clusterSize
		grow := (missing + cl - 1) / cl
		if len(n.data)+grow*cl > maxDirSize {
			return 0, syscall.ENOSPC
		}
		last := n.chain[len(n.chain)-1]
		cs, err := v.fat.alloc(grow, last)
		if err != nil {
			return 0, err
		}
		// The new clusters are zeros, written with the rest.
		from := len(n.data)
		n.chain = append(n.chain, cs...)
		n.data = append(n.data, make([]byte, grow*cl)...)
		v.writeDir(n, from, len(n.data))
		v.stagePlaceholder(cs)
	}
	copy(n.data[at:], slots)
	switch {
	case firstFree < 0 || firstFree == at:
		n.freeHint = at + len(slots)
	default:
		n.freeHint = firstFree
	}
	if e := n.data[at+len(slots)-entrySize : at+len(slots)]; n.aliases != nil && isShortEntry(e) {
		n.aliases[[11]byte(e[:11])]++
	}
	v.indexAdd(n, at, at+len(slots)-entrySize)
	return at, v.writeDir(n, at, at+len(slots))
}

// removeSlots marks slots [first, last] of n deleted (fat_remove_entries).
func (v *Volume) removeSlots(n *Node, first, last int) error {
	if e := n.data[last : last+entrySize]; n.aliases != nil && isShortEntry(e) {
		n.aliases[[11]byte(e[:11])]--
	}
	n.freeHint = min(n.freeHint, first)
	for off := first; off <= last; off += entrySize {
		n.data[off] = deletedFlag
	}
	n.index = nil // another entry may have the same folded name
	return v.writeDir(n, first, last+entrySize)
}

// buildSlots makes the slots of a new entry called name (vfat_build_slots):
// long-name slots unless the alias alone holds the name, then the short
// entry with attr, start cluster and the time.
func (v *Volume) buildSlots(dir *Node, name string, attr byte, start uint32, t fatTime) ([]byte, error) {
	u, err := longName(name)
	if err != nil {
		return nil, err
	}
	alias, alone, err := shortName(u, func(s [11]byte) bool { return v.aliasTaken(dir, s) }, v.tail())
	if err != nil {
		return nil, err
	}
	var slots []byte
	if !alone {
		sum := checksum(alias)
		padded := append([]uint16(nil), u...)
		if len(padded)%13 != 0 {
			padded = append(padded, 0)
			for len(padded)%13 != 0 {
				padded = append(padded, 0xffff)
			}
		}
		nr := len(padded) / 13
		slots = make([]byte, (nr+1)*entrySize)
		for i := nr; i > 0; i-- {
			s := slots[(nr-i)*entrySize:]
			s[0] = byte(i)
			if i == nr {
				s[0] |= 0x40
			}
			s[11], s[13] = attrLFN, sum
			p := padded[(i-1)*13:]
			for k := range 5 {
				binary.LittleEndian.PutUint16(s[1+2*k:], p[k])
			}
			for k := range 6 {
				binary.LittleEndian.PutUint16(s[14+2*k:], p[5+k])
			}
			for k := range 2 {
				binary.LittleEndian.PutUint16(s[28+2*k:], p[11+k])
			}
		}
	} else {
		slots = make([]byte, entrySize)
	}
	de := slots[len(slots)-entrySize:]
	copy(de, alias[:])
	de[11] = attr
	binary.LittleEndian.PutUint16(de[14:], t.time)
	binary.LittleEndian.PutUint16(de[16:], t.date)
	de[13] = t.cs
	binary.LittleEndian.PutUint16(de[18:], t.date)
	binary.LittleEndian.PutUint16(de[22:], t.time)
	binary.LittleEndian.PutUint16(de[24:], t.date)
	setStart(de, start)
	return slots, nil
}

func setStart(de []byte, c uint32) {
	binary.LittleEndian.PutUint16(de[26:], uint16(c))
	binary.LittleEndian.PutUint16(de[20:], uint16(c>>16))
}

// isEmpty reports whether directory n holds nothing but "." and ".."
// (fat_dir_empty).
func (v *Volume) isEmpty(n *Node) (bool, error) {
	empty := true
	err := v.entries(n, 0, func(*entry) bool { empty = false; return false })
	return empty, err
}

// subdirs counts the directory entries of n, "." and ".." included
// (fat_subdirs).
func (v *Volume) subdirs(n *Node) (int, error) {
	if err := v.loadDir(n); err != nil {
		return 0, err
	}
	count := 0
	d := n.data
	for off := 0; off+entrySize <= len(d); off += entrySize {
		e := d[off : off+entrySize]
		if e[0] == 0 || e[0] == deletedFlag || e[11] == attrLFN {
			continue
		}
		if e[11]&AttrDir != 0 && e[11]&AttrVolume == 0 {
			count++
		}
	}
	return count, nil
}
