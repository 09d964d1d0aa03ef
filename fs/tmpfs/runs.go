package tmpfs

// Page runs. A write that fills several consecutive holes of one leaf
// allocates their pages as one array (a run, up to 64 pages, 256 KiB),
// and the leaf records it, as Linux's large folios group pages. A read or
// write then moves the bytes of a whole run with one copy instead of one
// per 4 KiB page: a 64 KiB pread is one memmove, and a vectored read
// walks its segments against up to 256 KiB of source at a time.
//
// The record is per slot: runs[i] is the run that holds the page in slot
// i, or nil for a page allocated alone (or a hole). Invariant, with
// File.mu held and for a reader whose seqcount check passes: if runs[i]
// is r, then every slot r covers holds r's page for it. A page leaves
// the tree only through cutRuns first, which dissolves each run that
// holds a dropped slot (the pages it keeps become pages alone).
//
// Memory ordering. A pageRun never changes once stored; runs[i] is
// loaded and stored atomically. A lock-free reader (File.seq) that loads
// slot i (page pg) and then runs[i] (run r) may see the two from
// different moments, so it uses r only if pg is r's page for slot i, and
// then copies only from r's array: whatever it loaded, it reads memory of
// one live allocation, and the seqcount check throws the bytes away if
// they were torn. cutRuns stores a kept page's copy into its slot
// atomically, after clearing the slot's run; a reader that loaded the old
// page reads it, unchanged, from memory the garbage collector keeps.
//
// A run is one allocation, so a page dropped from one (truncate, punch
// hole) would keep the whole array alive: cutRuns copies the pages the run
// keeps to pages of their own instead, and the array goes with the last
// reader that holds it.

import (
	"sync/atomic"
	"unsafe"
)

// pageRun is the pages of consecutive slots of one leaf, allocated as one
// array. It is immutable.
type pageRun struct {
	pages []page // len >= 2
	first int    // the slot of pages[0]
}

// maxRun is the most bytes a run holds: a leaf's pages.
const maxRun = radixSize * pageSize

// leafRuns is the run record of a leaf, one entry per slot.
type leafRuns [radixSize]atomic.Pointer[pageRun]

// data returns the bytes stored contiguously from the start of the page
// in slot i of leaf n: the page's 4 KiB, or, if want (the bytes the caller
// would take from the page's start on) is more, through the end of its
// run. It returns nil for a hole. Readers may hold no lock (see above).
func (n *rnode) data(i int64, want int) []byte {
	pg := (*page)(n.slot(i))
	if pg == nil {
		return nil
	}
	if want > pageSize { // a read within one page skips the run lookup
		if lr := n.runs.Load(); lr != nil {
			return lr.data(i, pg)
		}
	}
	return pg[:]
}

// data is rnode.data for a leaf with runs: pg is the page in slot i.
func (lr *leafRuns) data(i int64, pg *page) []byte {
	if r := lr[i].Load(); r != nil {
		if j := int(i) - r.first; uint(j) < uint(len(r.pages)) && &r.pages[j] == pg {
			return unsafe.Slice(&r.pages[j][0], (len(r.pages)-j)*pageSize)
		}
	}
	return pg[:]
}

// insertRun stores pages as the pages at idx, idx+1, ..., which must be
// holes of one leaf; File.mu must be held for writing.
func (t *pageTree) insertRun(idx int64, pages []page) {
	for k := range pages {
		t.insert(idx+int64(k), &pages[k])
	}
	if len(pages) < 2 {
		return
	}
	leaf := t.leaf(idx)
	lr := leaf.runs.Load()
	if lr == nil {
		lr = new(leafRuns)
		leaf.runs.Store(lr)
	}
	r := &pageRun{pages: pages, first: int(idx & radixMask)}
	for s := r.first; s < r.first+len(pages); s++ {
		lr[s].Store(r)
	}
}

// cutRuns takes slots [lo, hi) of leaf n out of the runs that hold them,
// before their pages leave the tree. The pages such a run keeps are
// copied to pages of their own (each is copied once at most, since a page
// alone is in no run), so that the run's array goes back to Go's heap with
// the pages dropped: a file never holds memory its pages do not count.
// File.mu must be held for writing.
func (n *rnode) cutRuns(lo, hi int) {
	lr := n.runs.Load()
	if lr == nil {
		return
	}
	for i := lo; i < hi; i++ {
		r := lr[i].Load()
		if r == nil {
			continue
		}
		end := r.first + len(r.pages)
		for s := r.first; s < end; s++ {
			lr[s].Store(nil)
			if s < lo || s >= hi {
				pg := new(page)
				*pg = r.pages[s-r.first]
				atomic.StorePointer(&n.slots[s], unsafe.Pointer(pg))
			}
		}
		i = end - 1
	}
}

// allocRun allocates the pages for the holes from idx on, up to the page
// holding byte end-1 and the end of idx's leaf, within the size limit: one
// page, or a run of those that are holes in a row. It returns the pages'
// bytes, or nil when the size limit is reached. File.mu must be held for
// writing; idx must be a hole.
func (f *File) allocRun(idx, end int64) []byte {
	last := min((end-1)>>pageShift, idx|radixMask)
	want := 1
	if last > idx {
		leaf := f.pages.leaf(idx)
		for j := idx + 1; j <= last && (leaf == nil || leaf.slot(j&radixMask) == nil); j++ {
			want++
		}
	}
	got := 0
	for got < want && f.fs.reservePage() {
		got++
	}
	if got == 0 {
		return nil
	}
	if got > 8 && got&1 != 0 {
		// Above 32 KiB Go allocates in 8 KiB pages: an odd count would
		// waste 4 KiB, so the last page is left to the next call.
		f.fs.releasePages(1)
		got--
	}
	var pages []page
	if got == 1 {
		pages = unsafe.Slice(new(page), 1)
	} else {
		pages = make([]page, got)
	}
	f.pages.insertRun(idx, pages)
	return unsafe.Slice(&pages[0][0], got*pageSize)
}
