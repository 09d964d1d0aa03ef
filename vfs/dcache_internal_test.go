package vfs

import (
	"testing"
)

type benchDir struct{ child Node }

func (d *benchDir) Stat() (Stat, error)              { return Stat{}, nil }
func (d *benchDir) Lookup(name string) (Node, error) { return d.child, nil }

// BenchmarkDcacheLookup is one cached lookup, the dentry cache's hit
// path alone.
func BenchmarkDcacheLookup(b *testing.B) {
	var c dcache
	c.init(DefaultDentryCacheSize)
	d := &benchDir{}
	d.child = &benchDir{}
	c.lookup(d, d, "component", nil)
	b.ReportAllocs()
	for b.Loop() {
		c.lookup(d, d, "component", nil)
	}
}
