package tmpfs

// The page map of a regular file: a radix tree of 64-way nodes, grown in
// height as the file grows, as Linux's xarray is (XA_CHUNK_SHIFT 6). Only
// pages that hold data exist; a missing page is a hole. A lookup costs one
// load per level: one level up to 256 KiB, two up to 16 MiB, three up to
// 1 GiB, and nine cover tmpfs's whole 2^63-byte range.
//
// Concurrency. Changes to the tree are made under File.mu held
// exclusively. Readers either hold File.mu shared or hold no lock at all
// (File's seqcount read path): for them every slot is loaded with
// atomic.LoadPointer and stored with atomic.StorePointer, and the root
// and height are published together as one immutable treeTop, so a
// lock-free reader always walks a tree of the height it was given and
// reaches a *page only at height 1, never a node mistaken for a page. A
// node or page dropped from the tree stays valid memory for a reader
// that still holds it (the garbage collector keeps it); such a reader's
// bytes are thrown away by the seqcount check. The node counts (pages)
// are read only under File.mu; n is stored atomically under it, for
// File.Stat's lock-free read.

import (
	"sync/atomic"
	"unsafe"
)

const (
	pageShift = 12
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1

	radixShift = 6
	radixSize  = 1 << radixShift
	radixMask  = radixSize - 1
	// maxHeight levels of 6 bits index every page below 2^63 bytes.
	maxHeight = (63 - pageShift + radixShift - 1) / radixShift
)

// page is one 4 KiB page of file data.
type page [pageSize]byte

// rnode is one node of the tree. At height 1 its slots hold *page, above
// that *rnode: one array for both keeps every level a single load.
type rnode struct {
	slots [radixSize]unsafe.Pointer
	// pages counts the pages below this node; a node with none is removed.
	pages int64
	// runs, at height 1, records which slots hold pages of one allocation
	// (runs.go); nil until the leaf holds a run.
	runs atomic.Pointer[leafRuns]
}

// pageTree maps page indexes to pages.
type pageTree struct {
	top atomic.Pointer[treeTop] // nil when the tree holds no page
	n   int64                   // pages held; stored with atomic.StoreInt64
}

// treeTop is the root of a tree and its height, published as one value.
type treeTop struct {
	root   *rnode
	height int // levels below and including root
}

// slot loads slot i of n, for readers that may hold no lock.
func (n *rnode) slot(i int64) unsafe.Pointer {
	return atomic.LoadPointer(&n.slots[i])
}

// span returns the number of page indexes a tree of height h covers.
func span(h int) int64 { return 1 << uint(radixShift*h) }

// get returns the page at idx, or nil for a hole.
func (t *pageTree) get(idx int64) *page {
	if n := t.leaf(idx); n != nil {
		return (*page)(n.slot(idx & radixMask))
	}
	return nil
}

// leaf returns the node of height 1 whose slots hold the pages from
// idx&^radixMask to idx|radixMask, or nil if they are all holes. A reader
// of consecutive pages walks the tree once per 64 pages this way.
func (t *pageTree) leaf(idx int64) *rnode {
	// Written to inline: a read calls it once per 64 pages.
	top := t.top.Load()
	if top == nil {
		return nil
	}
	s := uint(radixShift * top.height)
	if idx>>s != 0 { // past span(top.height)
		return nil
	}
	n := top.root
	for s -= radixShift; s > 0; s -= radixShift {
		if n = (*rnode)(n.slot(idx >> s & radixMask)); n == nil {
			return nil
		}
	}
	return n
}

// insert stores pg at idx, which must be a hole.
func (t *pageTree) insert(idx int64, pg *page) {
	top := t.top.Load()
	if top == nil { // start as tall as idx needs, not with an empty level
		top = &treeTop{root: new(rnode), height: 1}
		for idx >= span(top.height) {
			top.height++
		}
		t.top.Store(top)
	}
	for idx >= span(top.height) {
		up := &rnode{pages: top.root.pages}
		up.slots[0] = unsafe.Pointer(top.root)
		top = &treeTop{root: up, height: top.height + 1}
		t.top.Store(top)
	}
	n := top.root
	for h := top.height - 1; h > 0; h-- {
		n.pages++
		s := &n.slots[(idx>>(radixShift*h))&radixMask]
		if *s == nil {
			atomic.StorePointer(s, unsafe.Pointer(new(rnode)))
		}
		n = (*rnode)(*s)
	}
	n.pages++
	atomic.StorePointer(&n.slots[idx&radixMask], unsafe.Pointer(pg))
	atomic.StoreInt64(&t.n, t.n+1)
}

// truncate drops every page at index first or above and returns how many
// it dropped.
func (t *pageTree) truncate(first int64) int64 {
	top := t.top.Load()
	if top == nil || first >= span(top.height) {
		return 0
	}
	var freed int64
	if first <= 0 {
		freed = t.n
	} else {
		freed = truncNode(top.root, top.height, first)
	}
	atomic.StoreInt64(&t.n, t.n-freed)
	if t.n == 0 {
		t.top.Store(nil)
		return freed
	}
	// Drop levels that only lead to slot 0, so lookups stay short.
	root, height := top.root, top.height
	for height > 1 && root.slots[0] != nil && (*rnode)(root.slots[0]).pages == t.n {
		root = (*rnode)(root.slots[0])
		height--
	}
	if height != top.height {
		t.top.Store(&treeTop{root: root, height: height})
	}
	return freed
}

// truncNode drops the pages at rel and above in n, a node of height h; rel
// is relative to n's first index.
func truncNode(n *rnode, h int, rel int64) int64 {
	shift := radixShift * (h - 1)
	if h == 1 {
		n.cutRuns(int(rel), radixSize)
	}
	var freed int64
	for i := rel >> shift; i < radixSize; i++ {
		s := &n.slots[i]
		if *s == nil {
			continue
		}
		if h == 1 {
			atomic.StorePointer(s, nil)
			freed++
			continue
		}
		c := (*rnode)(*s)
		inner := rel - i<<shift // first index relative to the child
		if inner > 0 {
			freed += truncNode(c, h-1, inner)
			if c.pages > 0 {
				continue
			}
		} else {
			freed += c.pages
		}
		atomic.StorePointer(s, nil)
	}
	n.pages -= freed
	return freed
}

// nextData returns the first index at or after idx that holds a page, or
// -1 if there is none.
func (t *pageTree) nextData(idx int64) int64 {
	top := t.top.Load()
	if top == nil || idx >= span(top.height) {
		return -1
	}
	return nextDataNode(top.root, top.height, 0, idx)
}

func nextDataNode(n *rnode, h int, base, idx int64) int64 {
	shift := radixShift * (h - 1)
	for i := (idx - base) >> shift; i < radixSize; i++ {
		s := n.slots[i]
		if s == nil {
			continue
		}
		cbase := base + i<<shift
		if h == 1 {
			return cbase
		}
		if r := nextDataNode((*rnode)(s), h-1, cbase, max(idx, cbase)); r >= 0 {
			return r
		}
	}
	return -1
}

// nextHole returns the first index at or after idx that holds no page.
func (t *pageTree) nextHole(idx int64) int64 {
	top := t.top.Load()
	if top == nil || idx >= span(top.height) {
		return idx
	}
	if r := nextHoleNode(top.root, top.height, 0, idx); r >= 0 {
		return r
	}
	return span(top.height)
}

func nextHoleNode(n *rnode, h int, base, idx int64) int64 {
	shift := radixShift * (h - 1)
	for i := (idx - base) >> shift; i < radixSize; i++ {
		s := n.slots[i]
		cbase := base + i<<shift
		if s == nil {
			return max(idx, cbase)
		}
		if h == 1 {
			continue
		}
		c := (*rnode)(s)
		if c.pages == span(h-1) { // full: no hole below
			continue
		}
		if r := nextHoleNode(c, h-1, cbase, max(idx, cbase)); r >= 0 {
			return r
		}
	}
	return -1
}
