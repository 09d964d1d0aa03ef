package tmpfs

// fallocate(2) on tmpfs, as Linux's shmem_fallocate: mode 0 and
// FALLOC_FL_KEEP_SIZE allocate pages, FALLOC_FL_PUNCH_HOLE|KEEP_SIZE frees
// them; every other mode gives EOPNOTSUPP (the kernel on this machine
// answers so for ZERO_RANGE, COLLAPSE_RANGE, INSERT_RANGE and
// UNSHARE_RANGE on tmpfs).
//
// A page that fallocate allocates is not yet written: Linux leaves its
// folio !uptodate, so it reads as zeros, counts in st_blocks, and is a
// hole for SEEK_DATA and SEEK_HOLE until a write, or a second fallocate,
// lands on it (reads and punched partial pages leave it so). File.unwritten
// holds those pages, as ranges of page indexes, under File.mu.

import (
	"github.com/iovfs/iovfs/vfs"
	"sort"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Fallocate implements vfs.Fallocater. The VFS has checked the mode
// combinations Linux refuses everywhere, the access mode and the range
// (off >= 0, length > 0, no overflow). Allocation is all or nothing: when
// the size limit stops it, the pages it added go again and it gives
// ENOSPC; a range larger than the whole file system gives ENOSPC at once.
// Without FALLOC_FL_KEEP_SIZE the size grows to off+length if that is
// larger. Punching a hole frees the whole pages of the range and zeroes
// the parts of pages at its ends; the size stays.
func (h *OpenFile) Fallocate(mode uint32, off, length int64, _ vfs.Cred) error {
	f := h.f
	if mode&^(unix.FALLOC_FL_KEEP_SIZE|unix.FALLOC_FL_PUNCH_HOLE) != 0 {
		return unix.EOPNOTSUPP
	}
	end := off + length
	if mode&unix.FALLOC_FL_PUNCH_HOLE != 0 {
		f.lockData()
		f.punchLocked(off, end)
		f.unlockData()
		f.changed(clockNow().wall, true)
		return nil
	}
	first, last := off>>pageShift, (end-1)>>pageShift+1
	if max := f.fs.maxPages; max != 0 && last-first > max {
		return errENOSPC // shmem_fallocate: "avoid a swapstorm"
	}
	f.lockData()
	var added pageRanges
	for idx := first; idx < last; idx++ {
		if f.pages.get(idx) != nil {
			// shmem_get_folio_gfp(SGP_FALLOC) initializes a page an
			// earlier fallocate made, "lest undo on failure cancel our
			// earlier guarantee": it becomes data.
			f.written(idx)
			continue
		}
		if !f.fs.reservePage() {
			for _, r := range added.r {
				for i := r.lo; i < r.hi; i++ {
					f.pages.remove(i)
				}
				f.fs.releasePages(r.hi - r.lo)
				f.unwritten.removeRange(r.lo, r.hi)
			}
			f.unlockData()
			return errENOSPC
		}
		f.pages.insert(idx, new(page))
		added.add(idx, idx+1)
		f.unwritten.add(idx, idx+1)
	}
	if mode&unix.FALLOC_FL_KEEP_SIZE == 0 && end > f.size {
		atomic.StoreInt64(&f.size, end)
	}
	f.unlockData()
	f.changed(clockNow().wall, false)
	return nil
}

// punchLocked frees the pages wholly inside [off, end) and zeroes the
// rest of the range, with mu held (shmem_truncate_range).
func (f *File) punchLocked(off, end int64) {
	lo, hi := (off+pageMask)>>pageShift, end>>pageShift // whole pages
	if lo > hi {                                        // inside one page
		if pg := f.pages.get(off >> pageShift); pg != nil {
			clear(pg[off&pageMask : end-(off>>pageShift)<<pageShift])
		}
		return
	}
	if off&pageMask != 0 {
		if pg := f.pages.get(off >> pageShift); pg != nil {
			clear(pg[off&pageMask:])
		}
	}
	if end&pageMask != 0 {
		if pg := f.pages.get(hi); pg != nil {
			clear(pg[:end&pageMask])
		}
	}
	var freed int64
	for idx := lo; idx < hi; {
		if f.pages.get(idx) == nil {
			next := f.pages.nextData(idx)
			if next < 0 || next >= hi {
				break
			}
			idx = next
			continue
		}
		f.pages.remove(idx)
		freed++
		idx++
	}
	f.fs.releasePages(freed)
	f.unwritten.removeRange(lo, hi)
}

// written marks page idx as written, with mu held.
func (f *File) written(idx int64) {
	if len(f.unwritten.r) != 0 {
		f.unwritten.removeRange(idx, idx+1)
	}
}

// nextData returns the first page at or after idx that holds written
// data, or -1.
func (f *File) nextData(idx int64) int64 {
	for {
		idx = f.pages.nextData(idx)
		if idx < 0 || len(f.unwritten.r) == 0 {
			return idx
		}
		r, ok := f.unwritten.at(idx)
		if !ok {
			return idx
		}
		idx = r.hi
	}
}

// nextHole returns the first page at or after idx that is missing or
// unwritten.
func (f *File) nextHole(idx int64) int64 {
	h := f.pages.nextHole(idx)
	if u, ok := f.unwritten.firstFrom(idx); ok && u < h {
		return u
	}
	return h
}

// remove drops the page at idx, if any, and the nodes it leaves empty;
// File.mu must be held for writing (lockData). Slots are cleared with
// atomic stores for lock-free readers (pages.go).
func (t *pageTree) remove(idx int64) bool {
	top := t.top.Load()
	if top == nil || idx >= span(top.height) {
		return false
	}
	var path [maxHeight + 1]*rnode
	var slot [maxHeight + 1]int
	n := top.root
	for h := top.height - 1; h >= 0; h-- {
		i := int(idx>>uint(radixShift*h)) & radixMask
		path[h], slot[h] = n, i
		if h == 0 {
			break
		}
		n = (*rnode)(n.slots[i])
		if n == nil {
			return false
		}
	}
	if path[0].slots[slot[0]] == nil {
		return false
	}
	path[0].cutRuns(slot[0], slot[0]+1)
	atomic.StorePointer(&path[0].slots[slot[0]], nil)
	for h := 0; h < top.height; h++ {
		path[h].pages--
		if path[h].pages == 0 && h+1 < top.height {
			atomic.StorePointer(&path[h+1].slots[slot[h+1]], nil)
		}
	}
	atomic.StoreInt64(&t.n, t.n-1)
	if t.n == 0 {
		t.top.Store(nil)
	}
	return true
}

// pageRanges is a set of page indexes held as sorted, disjoint,
// non-adjacent half-open ranges.
type pageRanges struct{ r []pageRange }

type pageRange struct{ lo, hi int64 }

// search returns the index of the first range whose hi is above idx.
func (s *pageRanges) search(idx int64) int {
	return sort.Search(len(s.r), func(i int) bool { return s.r[i].hi > idx })
}

// at returns the range holding idx.
func (s *pageRanges) at(idx int64) (pageRange, bool) {
	i := s.search(idx)
	if i < len(s.r) && s.r[i].lo <= idx {
		return s.r[i], true
	}
	return pageRange{}, false
}

// firstFrom returns the smallest index in the set at or after idx.
func (s *pageRanges) firstFrom(idx int64) (int64, bool) {
	i := s.search(idx)
	if i == len(s.r) {
		return 0, false
	}
	return max(idx, s.r[i].lo), true
}

// add puts [lo, hi) in the set.
func (s *pageRanges) add(lo, hi int64) {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].hi >= lo })
	j := i
	for j < len(s.r) && s.r[j].lo <= hi {
		lo, hi = min(lo, s.r[j].lo), max(hi, s.r[j].hi)
		j++
	}
	s.r = append(s.r[:i], append([]pageRange{{lo, hi}}, s.r[j:]...)...)
}

// removeRange takes [lo, hi) out of the set.
func (s *pageRanges) removeRange(lo, hi int64) {
	if len(s.r) == 0 || lo >= hi {
		return
	}
	var out []pageRange
	for _, r := range s.r {
		if r.hi <= lo || r.lo >= hi {
			out = append(out, r)
			continue
		}
		if r.lo < lo {
			out = append(out, pageRange{r.lo, lo})
		}
		if r.hi > hi {
			out = append(out, pageRange{hi, r.hi})
		}
	}
	s.r = out
}
