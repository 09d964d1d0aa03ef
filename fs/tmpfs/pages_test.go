package tmpfs

import (
	"testing"

	"pgregory.net/rapid"
)

// TestPageTree checks the radix tree against a map over the whole index
// range, so that every height from 1 to maxHeight is exercised: insert,
// get, truncate, nextData and nextHole, and the page counts in the nodes.
func TestPageTree(t *testing.T) {
	const maxIdx = (1<<63 - 1) >> pageShift
	rapid.Check(t, func(t *rapid.T) {
		var tree pageTree
		model := map[int64]*page{}
		// Indexes cluster near a few bases, so that neighbours, full
		// leaves and far-apart pages all occur.
		base := rapid.SampledFrom([]int64{0, 60, 4090, 1 << 20, 1 << 40, maxIdx - 70})
		index := rapid.Custom(func(t *rapid.T) int64 {
			return min(maxIdx, base.Draw(t, "base")+rapid.Int64Range(0, 80).Draw(t, "delta"))
		})
		for range rapid.IntRange(1, 60).Draw(t, "ops") {
			op := rapid.IntRange(0, 4).Draw(t, "op")
			switch op {
			case 0, 1: // insert a run
				idx := index.Draw(t, "idx")
				for i := range rapid.Int64Range(1, 70).Draw(t, "run") {
					if j := idx + i; j <= maxIdx && model[j] == nil {
						pg := new(page)
						tree.insert(j, pg)
						model[j] = pg
					}
				}
			case 2: // truncate
				first := index.Draw(t, "first")
				want := int64(0)
				for j := range model {
					if j >= first {
						delete(model, j)
						want++
					}
				}
				if got := tree.truncate(first); got != want {
					t.Fatalf("truncate(%d) freed %d, want %d", first, got, want)
				}
			case 3: // nextData, nextHole
				idx := index.Draw(t, "idx")
				wantData := int64(-1)
				for j := range model {
					if j >= idx && (wantData < 0 || j < wantData) {
						wantData = j
					}
				}
				if got := tree.nextData(idx); got != wantData {
					t.Fatalf("nextData(%d) = %d, want %d", idx, got, wantData)
				}
				wantHole := idx
				for model[wantHole] != nil {
					wantHole++
				}
				if got := tree.nextHole(idx); got != wantHole {
					t.Fatalf("nextHole(%d) = %d, want %d", idx, got, wantHole)
				}
			case 4: // get around an index
				idx := index.Draw(t, "idx")
				for j := max(0, idx-2); j <= min(maxIdx, idx+2); j++ {
					if got := tree.get(j); got != model[j] {
						t.Fatalf("get(%d) = %p, want %p", j, got, model[j])
					}
				}
			}
			if tree.n != int64(len(model)) {
				t.Fatalf("tree holds %d pages, model %d", tree.n, len(model))
			}
			if top := tree.top.Load(); top != nil {
				if top.root.pages != tree.n {
					t.Fatalf("root counts %d pages, tree %d", top.root.pages, tree.n)
				}
				if top.height > maxHeight {
					t.Fatalf("height %d", top.height)
				}
				if top.height > 1 && top.root.slots[0] != nil && (*rnode)(top.root.slots[0]).pages == tree.n && op == 2 {
					t.Fatalf("truncate left a level with only slot 0")
				}
				checkCounts(t, top.root, top.height)
			}
		}
	})
}

// checkCounts verifies that every node counts the pages below it and that
// no empty node is left in the tree.
func checkCounts(t *rapid.T, n *rnode, h int) int64 {
	var total int64
	for _, s := range n.slots {
		if s == nil {
			continue
		}
		if h == 1 {
			total++
			continue
		}
		c := checkCounts(t, (*rnode)(s), h-1)
		if c == 0 {
			t.Fatalf("empty node left at height %d", h-1)
		}
		total += c
	}
	if total != n.pages {
		t.Fatalf("node at height %d counts %d pages, holds %d", h, n.pages, total)
	}
	return total
}
