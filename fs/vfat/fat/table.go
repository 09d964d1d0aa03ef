package fat

// The file allocation table, kept in memory (the first FAT's bytes as
// far as the clusters reach) and written back to every FAT copy where it
// changed, a run of adjacent changed sectors at a time.
//
// A large FAT32 table whose FSInfo sector gives a free count is read a
// chunk at a time, when an entry of the chunk is first needed, as Linux
// reads the FAT through its buffer cache: opening a volume then costs
// no more than the chunks its work touches, not the whole FAT (2 MiB on
// a 256 MiB volume). The free count starts from FSInfo's, as Linux's
// does, and is counted over the whole table when it must be exact: for
// statfs, and before an allocation it would refuse.

import (
	"encoding/binary"
	"math/bits"
	"syscall"
)

const (
	eocMark = 0x0fffffff // end of chain, written as the width's all-ones
	badMark = 0x0ffffff7
)

// The table is used under its Volume's lock.
type table struct {
	g     *geometry
	dev   Device
	n     int    // bytes of the FAT kept: entries 0 .. clusters+1
	b     []byte // the first FAT's n bytes, and slack for FAT12's word reads
	dirty []uint64
	free  uint32 // free clusters: counted, or FSInfo's count kept up to date
	exact bool   // free was counted over the whole table
	next  uint32 // where the next search for a free cluster starts

	// A lazy table reads its chunks (fatChunk bytes of b) when first
	// needed; loaded has a bit per chunk read. A chunk that cannot be
	// read reads as bad clusters, and broken makes every later write
	// of the table fail, so that those marks never reach the device.
	lazy   bool
	loaded []uint64
	broken bool
}

// fatChunk is the unit of a lazy table's reads; lazyMin is the smallest
// table read lazily (smaller ones are read whole at once).
const (
	fatChunk = 64 << 10
	lazyMin  = 4 * fatChunk
)

// load sets the table up from dev: whole, or lazily when it is a FAT32
// table of at least lazyMin bytes and free is FSInfo's valid free count
// (hinted).
func (t *table) load(dev Device, free uint32, hinted bool) error {
	g := t.g
	n := ((int64(g.clusters)+2)*int64(g.bits) + 7) / 8
	n = min(n, g.fatSectors*int64(g.bps))
	t.n = int(n)
	t.dev = dev
	t.b = make([]byte, n+4)
	t.dirty = make([]uint64, (n/int64(g.bps))/64+1)
	t.next = 2
	if g.bits == 32 && n >= lazyMin && hinted && free <= g.clusters {
		t.lazy = true
		t.loaded = make([]uint64, (n+fatChunk-1)/fatChunk/64+1)
		t.free = free
		return nil
	}
	prefault(t.b)
	if _, err := dev.ReadAt(t.b[:n], g.fatStart); err != nil {
		return syscall.EIO
	}
	t.free = t.countFree()
	t.exact = true
	return nil
}

// fill reads chunk k of a lazy table, once.
func (t *table) fill(k int) {
	if t.loaded[k/64]&(1<<(k%64)) != 0 {
		return
	}
	t.loaded[k/64] |= 1 << (k % 64)
	lo := k * fatChunk
	if lo >= t.n {
		return
	}
	hi := min(lo+fatChunk, t.n)
	b := t.b[lo:hi]
	prefault(b)
	if _, err := t.dev.ReadAt(b, t.g.fatStart+int64(lo)); err != nil {
		for o := 0; o+4 <= len(b); o += 4 {
			binary.LittleEndian.PutUint32(b[o:], badMark)
		}
		t.broken = true
	}
}

// exactFree makes free exact, reading what a lazy table has not read.
func (t *table) exactFree() {
	if t.exact {
		return
	}
	for k := 0; k*fatChunk < t.n; k++ {
		t.fill(k)
	}
	t.free = t.countFree()
	t.exact = true
}

// countFree counts the free entries of clusters 2 .. clusters+1 (the
// geometry keeps them within the FAT's kept bytes).
func (t *table) countFree() uint32 {
	var free uint32
	switch t.g.bits {
	case 32:
		end := min(int(t.g.clusters)+2, t.n/4)
		for o := 8; o < end*4; o += 4 {
			if binary.LittleEndian.Uint32(t.b[o:])&0x0fffffff == 0 {
				free++
			}
		}
	case 16:
		end := min(int(t.g.clusters)+2, t.n/2)
		for o := 4; o < end*2; o += 2 {
			if binary.LittleEndian.Uint16(t.b[o:]) == 0 {
				free++
			}
		}
	default:
		for c := uint32(2); c < t.g.clusters+2; c++ {
			if t.get(c) == 0 {
				free++
			}
		}
	}
	return free
}

// get returns the entry of cluster c (0 <= c < clusters+2), masked to 28
// bits on FAT32, with end-of-chain values normalised to eocMark and the
// bad-cluster mark to badMark.
func (t *table) get(c uint32) uint32 {
	var v uint32
	switch t.g.bits {
	case 12:
		o := int(c) * 3 / 2
		w := uint32(binary.LittleEndian.Uint16(t.b[o:]))
		if c&1 != 0 {
			v = w >> 4
		} else {
			v = w & 0xfff
		}
		if v >= 0xff8 {
			return eocMark
		}
		if v == 0xff7 {
			return badMark
		}
	case 16:
		v = uint32(binary.LittleEndian.Uint16(t.b[c*2:]))
		if v >= 0xfff8 {
			return eocMark
		}
		if v == 0xfff7 {
			return badMark
		}
	default:
		if t.lazy {
			t.fill(int(c) * 4 / fatChunk)
		}
		v = binary.LittleEndian.Uint32(t.b[c*4:]) & 0x0fffffff
		if v >= 0x0ffffff8 {
			return eocMark
		}
	}
	return v
}

func (t *table) set(c, v uint32) {
	old := t.get(c)
	var o, n int
	switch t.g.bits {
	case 12:
		v &= 0xfff
		o = int(c) * 3 / 2
		w := binary.LittleEndian.Uint16(t.b[o:])
		if c&1 != 0 {
			w = w&0x000f | uint16(v)<<4
		} else {
			w = w&0xf000 | uint16(v)
		}
		binary.LittleEndian.PutUint16(t.b[o:], w)
		n = 2
	case 16:
		o, n = int(c)*2, 2
		binary.LittleEndian.PutUint16(t.b[o:], uint16(v))
	default:
		o, n = int(c)*4, 4
		w := binary.LittleEndian.Uint32(t.b[o:])
		binary.LittleEndian.PutUint32(t.b[o:], w&0xf0000000|v&0x0fffffff)
	}
	for s := o / t.g.bps; s <= (o+n-1)/t.g.bps; s++ {
		t.dirty[s/64] |= 1 << (s % 64)
	}
	switch {
	case old == 0 && v != 0:
		t.free--
	case old != 0 && v == 0:
		t.free++
	}
}

// valid reports whether c is a data cluster number.
func (t *table) valid(c uint32) bool { return c >= 2 && c < t.g.clusters+2 }

// chain returns the clusters of the chain starting at first. A chain
// that leaves the volume, meets a free or bad cluster, or runs longer
// than the volume (a loop) gives EIO, as fat_get_cluster's checks do.
func (t *table) chain(first uint32) ([]uint32, error) {
	if first == 0 {
		return nil, nil
	}
	var out []uint32
	for c := first; ; {
		if !t.valid(c) || uint32(len(out)) >= t.g.clusters {
			return nil, syscall.EIO
		}
		out = append(out, c)
		next := t.get(c)
		if next == eocMark {
			return out, nil
		}
		c = next
	}
}

// alloc takes n free clusters, links them into a chain ending in EOC and
// appends that chain to after (0: a new chain). It returns the new
// clusters, or ENOSPC taking none.
func (t *table) alloc(n int, after uint32) ([]uint32, error) {
	if uint32(n) > t.free {
		t.exactFree() // FSInfo's count may have been low
		if uint32(n) > t.free {
			return nil, syscall.ENOSPC
		}
	}
	out := make([]uint32, 0, n)
	c := t.next
	for scanned := uint32(0); len(out) < n && scanned < t.g.clusters; scanned++ {
		if !t.valid(c) {
			c = 2
		}
		if t.get(c) == 0 {
			out = append(out, c)
		}
		c++
	}
	if len(out) < n {
		t.exactFree() // FSInfo's count was high: callers use free next
		return nil, syscall.ENOSPC
	}
	for i, c := range out {
		if i+1 < len(out) {
			t.set(c, out[i+1])
		} else {
			t.set(c, eocMark)
		}
	}
	if after != 0 {
		t.set(after, out[0])
	}
	t.next = out[len(out)-1] + 1
	return out, nil
}

// freeChain frees the clusters cs.
func (t *table) freeChain(cs []uint32) {
	for _, c := range cs {
		t.set(c, 0)
	}
}

// flush writes the changed sectors to every FAT copy: a run of adjacent
// changed sectors in one write per copy.
func (t *table) flush(dev Device) error {
	if t.broken {
		return syscall.EIO
	}
	g := t.g
	bps := int64(g.bps)
	sectors := len(t.dirty) * 64
	for s := 0; s < sectors; {
		w := t.dirty[s/64] >> (s % 64)
		if w == 0 {
			s = (s/64 + 1) * 64
			continue
		}
		s += bits.TrailingZeros64(w)
		e := s + 1
		for e < sectors && t.dirty[e/64]&(1<<(e%64)) != 0 {
			e++
		}
		lo := int64(s) * bps
		hi := min(int64(e)*bps, int64(t.n))
		for f := 0; f < g.nfats; f++ {
			if _, err := dev.WriteAt(t.b[lo:hi], g.fatStart+int64(f)*g.fatSectors*bps+lo); err != nil {
				return syscall.EIO
			}
		}
		s = e
	}
	clear(t.dirty)
	return nil
}
