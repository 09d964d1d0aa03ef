package fat

// The file allocation table, kept in memory (the first FAT's bytes as
// far as the clusters reach) and written back to every FAT copy where it
// changed, a run of adjacent changed sectors at a time.

import (
	"encoding/binary"
	"math/bits"
	"syscall"
)

const (
	eocMark = 0x0fffffff // end of chain, written as the width's all-ones
	badMark = 0x0ffffff7
)

type table struct {
	g     *geometry
	n     int    // bytes of the FAT kept: entries 0 .. clusters+1
	b     []byte // the first FAT's n bytes, and slack for FAT12's word reads
	dirty []uint64
	free  uint32 // free clusters
	next  uint32 // where the next search for a free cluster starts
}

func (t *table) load(dev Device) error {
	g := t.g
	n := ((int64(g.clusters)+2)*int64(g.bits) + 7) / 8
	n = min(n, g.fatSectors*int64(g.bps))
	t.n = int(n)
	t.b = make([]byte, n+4)
	prefault(t.b)
	if _, err := dev.ReadAt(t.b[:n], g.fatStart); err != nil {
		return syscall.EIO
	}
	t.dirty = make([]uint64, (n/int64(g.bps))/64+1)
	t.free = t.countFree()
	t.next = 2
	return nil
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
		return nil, syscall.ENOSPC
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
