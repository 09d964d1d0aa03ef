package iovfs_test

import (
	"testing"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// benchPath is a 6-component path: five directories and a file.
const benchPath = "/tmp/a/b/c/d/f"

// credProcs returns a root process and an unprivileged one (uid 1000, two
// supplementary groups) in one namespace holding benchPath.
func credProcs(b *testing.B) map[string]*vfs.Proc {
	p := newProc(b)
	for _, d := range []string{"/tmp/a", "/tmp/a/b", "/tmp/a/b/c", "/tmp/a/b/c/d"} {
		must(b, p.Mkdir(d, 0o755))
	}
	createFile(b, p, benchPath, "data")
	return map[string]*vfs.Proc{"root": p, "user": vfs.NewProcCred(p.Namespace(), 1000, 1000, 1001, 1002)}
}

// BenchmarkOpenClose opens and closes benchPath: the walk checks search
// permission on every directory for the unprivileged process, and read
// permission on the file.
func BenchmarkOpenClose(b *testing.B) {
	procs := credProcs(b)
	for _, who := range []string{"root", "user"} {
		p := procs[who]
		b.Run(who, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				fd, err := p.Open(benchPath, unix.O_RDONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				p.Close(fd)
			}
		})
	}
}

// BenchmarkStat stats benchPath.
func BenchmarkStat(b *testing.B) {
	procs := credProcs(b)
	for _, who := range []string{"root", "user"} {
		p := procs[who]
		b.Run(who, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Stat(benchPath); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
