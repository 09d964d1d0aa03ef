package iovfs_test

import (
	"testing"

	"github.com/iovfs/iovfs/vfs"
)

// lstatPath6 is a 6-component path on tmpfs, made by mkPath6.
const lstatPath6 = "/tmp/a/bb/ccc/dddd/file"

func mkPath6(t testing.TB, p *vfs.Proc) {
	t.Helper()
	for _, d := range []string{"/tmp/a", "/tmp/a/bb", "/tmp/a/bb/ccc", "/tmp/a/bb/ccc/dddd"} {
		must(t, p.Mkdir(d, 0o755))
	}
	createFile(t, p, lstatPath6, "x")
}

// BenchmarkLstat6 is a repeated Lstat of a 6-component path (4 on the
// root tmpfs's /tmp mount, crossing one mount), with the dentry cache on
// and off.
func BenchmarkLstat6(b *testing.B) {
	for _, v := range []struct {
		name string
		size int
	}{{"dcache", vfs.DefaultDentryCacheSize}, {"nocache", 0}} {
		b.Run(v.name, func(b *testing.B) {
			p := newProc(b)
			p.Namespace().SetDentryCacheSize(v.size)
			mkPath6(b, p)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Lstat(lstatPath6); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
