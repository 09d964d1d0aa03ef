package iovfs_test

import (
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkRename renames a file back and forth on tmpfs, within one
// directory and between two.
func BenchmarkRename(b *testing.B) {
	for _, v := range []struct{ name, a, b string }{
		{"samedir", "/tmp/r/x/a", "/tmp/r/x/b"},
		{"crossdir", "/tmp/r/x/a", "/tmp/r/y/a"},
	} {
		b.Run(v.name, func(b *testing.B) {
			p := newProc(b)
			for _, d := range []string{"/tmp/r", "/tmp/r/x", "/tmp/r/y"} {
				must(b, p.Mkdir(d, 0o755))
			}
			createFile(b, p, v.a, "")
			b.ReportAllocs()
			for b.Loop() {
				must(b, p.Rename(v.a, v.b))
				must(b, p.Rename(v.b, v.a))
			}
		})
	}
}

// BenchmarkCreateDirs creates and removes files on tmpfs from one
// goroutine, and from two goroutines each in a directory of its own, as
// two processes (forks of one) would: the time per create (open with
// O_CREAT|O_EXCL, close, unlink) shows whether creates in different
// directories run in parallel (the directory locks are per directory).
func BenchmarkCreateDirs(b *testing.B) {
	const names = 64
	for _, workers := range []int{1, 2} {
		b.Run(strconv.Itoa(workers)+"dirs", func(b *testing.B) {
			p := newProc(b)
			paths := make([][]string, workers)
			for w := range workers {
				dir := "/tmp/c" + strconv.Itoa(w)
				must(b, p.Mkdir(dir, 0o755))
				for i := range names {
					paths[w] = append(paths[w], dir+"/f"+strconv.Itoa(i))
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				p, err := p.Fork()
				if err != nil {
					b.Fatal(err)
				}
				go func(paths []string, n int) {
					defer wg.Done()
					for i := range n {
						path := paths[i%names]
						fd, err := p.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
						if err != nil {
							b.Error(err)
							return
						}
						p.Close(fd)
						if err := p.Unlink(path); err != nil {
							b.Error(err)
							return
						}
					}
				}(paths[w], b.N/workers)
			}
			wg.Wait()
		})
	}
}
