package vfs

// The mount filter: a walk step asks the mount table whether a mount
// covers the node it reached, every step, and nearly always the answer is
// no. The filter answers most of those noes with one load: a bit per
// hash of a mount point's pointer word, set for every mount point in the
// table (all bits when a point's Node is not a pointer, whose words do not
// identify it). A clear bit means no mount is on the node; a set bit
// sends the step to the table (mountedOn). Linux answers the same
// question with the dentry's DCACHE_MOUNTED flag.
//
// The filter is written under Namespace.mu, with the table: bits are
// added before a new table is published and the exact set is stored
// after, so a walk that can see a mount in the table never finds its bit
// clear; a bit left set by an unmount only costs a table scan.

import "sync/atomic"

// mountFilter is 1024 bits (a walk of a few directories rarely meets a
// false "maybe", whose crossing check leaves the walk's fast loop); each
// word is loaded and stored atomically.
type mountFilter [filterWords]atomic.Uint64

const filterWords = 16

// bitOf returns the word and bit of the pointer word w.
func bitOf(w uintptr) (int, uint64) {
	h := mix(w) >> 54
	return int(h >> 6), 1 << (h & 63)
}

// mayCover reports whether a mount may cover n: false means none does.
func (f *mountFilter) mayCover(n Node) bool {
	i, b := bitOf(ifaceWords(n).data)
	return f[i].Load()&b != 0
}

// bits computes the filter of table t.
func filterOf(t map[mountKey]*mount) (bits [filterWords]uint64) {
	for k := range t {
		w, ok := dirWord(k.point)
		if !ok {
			for i := range bits {
				bits[i] = ^uint64(0)
			}
			return bits
		}
		i, b := bitOf(w)
		bits[i] |= b
	}
	return bits
}

// add sets the bits of table t, before t is published.
func (f *mountFilter) add(t map[mountKey]*mount) {
	bits := filterOf(t)
	for i := range f {
		f[i].Or(bits[i])
	}
}

// set makes the filter exactly t's, after t is published.
func (f *mountFilter) set(t map[mountKey]*mount) {
	bits := filterOf(t)
	for i := range f {
		f[i].Store(bits[i])
	}
}
