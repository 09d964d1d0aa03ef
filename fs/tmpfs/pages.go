package tmpfs

// The page map of a regular file: a radix tree of 64-way nodes, grown in
// height as the file grows, as Linux's xarray is (XA_CHUNK_SHIFT 6). Only
// pages that hold data exist; a missing page is a hole. A lookup costs one
// load per level: one level up to 256 KiB, two up to 16 MiB, three up to
// 1 GiB, and nine cover tmpfs's whole 2^63-byte range.
//
// The tree has no lock of its own: File.mu guards it.

import "unsafe"

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
}

// pageTree maps page indexes to pages.
type pageTree struct {
	root   *rnode // nil when the tree holds no page
	height int    // levels below and including root; 0 when empty
	n      int64  // pages held
}

// span returns the number of page indexes a tree of height h covers.
func span(h int) int64 { return 1 << uint(radixShift*h) }

// get returns the page at idx, or nil for a hole.
func (t *pageTree) get(idx int64) *page {
	n := t.root
	if n == nil || idx >= span(t.height) {
		return nil
	}
	for h := t.height - 1; h > 0; h-- {
		n = (*rnode)(n.slots[(idx>>uint(radixShift*h))&radixMask])
		if n == nil {
			return nil
		}
	}
	return (*page)(n.slots[idx&radixMask])
}

// insert stores pg at idx, which must be a hole.
func (t *pageTree) insert(idx int64, pg *page) {
	if t.root == nil { // start as tall as idx needs, not with an empty level
		t.root, t.height = new(rnode), 1
		for idx >= span(t.height) {
			t.height++
		}
	}
	for idx >= span(t.height) {
		up := &rnode{pages: t.root.pages}
		up.slots[0] = unsafe.Pointer(t.root)
		t.root = up
		t.height++
	}
	n := t.root
	for h := t.height - 1; h > 0; h-- {
		n.pages++
		s := &n.slots[(idx>>(radixShift*h))&radixMask]
		if *s == nil {
			*s = unsafe.Pointer(new(rnode))
		}
		n = (*rnode)(*s)
	}
	n.pages++
	n.slots[idx&radixMask] = unsafe.Pointer(pg)
	t.n++
}

// truncate drops every page at index first or above and returns how many
// it dropped.
func (t *pageTree) truncate(first int64) int64 {
	if t.root == nil || first >= span(t.height) {
		return 0
	}
	var freed int64
	if first <= 0 {
		freed = t.n
	} else {
		freed = truncNode(t.root, t.height, first)
	}
	t.n -= freed
	if t.n == 0 {
		t.root, t.height = nil, 0
		return freed
	}
	// Drop levels that only lead to slot 0, so lookups stay short.
	for t.height > 1 && t.root.slots[0] != nil && (*rnode)(t.root.slots[0]).pages == t.n {
		t.root = (*rnode)(t.root.slots[0])
		t.height--
	}
	return freed
}

// truncNode drops the pages at rel and above in n, a node of height h; rel
// is relative to n's first index.
func truncNode(n *rnode, h int, rel int64) int64 {
	shift := radixShift * (h - 1)
	var freed int64
	for i := rel >> shift; i < radixSize; i++ {
		s := &n.slots[i]
		if *s == nil {
			continue
		}
		if h == 1 {
			*s = nil
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
		*s = nil
	}
	n.pages -= freed
	return freed
}

// nextData returns the first index at or after idx that holds a page, or
// -1 if there is none.
func (t *pageTree) nextData(idx int64) int64 {
	if t.root == nil || idx >= span(t.height) {
		return -1
	}
	return nextDataNode(t.root, t.height, 0, idx)
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
	if t.root == nil || idx >= span(t.height) {
		return idx
	}
	if r := nextHoleNode(t.root, t.height, 0, idx); r >= 0 {
		return r
	}
	return span(t.height)
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
