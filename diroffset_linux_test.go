package iovfs_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// dirSide is a directory on one system, for TestDirOffsetsKernel: calls
// relative to it, and a descriptor reading it.
type dirSide struct {
	create   func(name string) error
	unlink   func(name string) error
	rename   func(a, b string, flags uint) error
	getdents func(buf []byte) (int, error)
	seek     func(off int64) error
}

func hostDirSide(t *testing.T, dir string) dirSide {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(dfd) })
	return dirSide{
		create: func(name string) error {
			fd, err := unix.Openat(dfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			if err == nil {
				unix.Close(fd)
			}
			return err
		},
		unlink: func(name string) error { return unix.Unlinkat(dfd, name, 0) },
		rename: func(a, b string, fl uint) error { return unix.Renameat2(dfd, a, dfd, b, fl) },
		getdents: func(buf []byte) (int, error) {
			return testenv.KernelGetdents(dfd, buf)
		},
		seek: func(off int64) error { _, err := unix.Seek(dfd, off, 0); return err },
	}
}

func ourDirSide(t *testing.T, p *vfs.Proc, dir string) dirSide {
	dfd, err := p.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	return dirSide{
		create: func(name string) error {
			fd, err := p.Openat(dfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
			if err == nil {
				p.Close(fd)
			}
			return err
		},
		unlink:   func(name string) error { return p.Unlinkat(dfd, name, 0) },
		rename:   func(a, b string, fl uint) error { return p.Renameat2(dfd, a, dfd, b, fl) },
		getdents: func(buf []byte) (int, error) { return p.Getdents64(dfd, buf) },
		seek:     func(off int64) error { _, err := p.Seek(dfd, off, 0); return err },
	}
}

// direntsOf decodes linux_dirent64 records: each name with its d_off,
// which is left out for "." and ".." (iovfs's VFS numbers them itself).
func direntsOf(buf []byte) (names []string, offs []int64) {
	for len(buf) >= 19 {
		off := int64(binary.LittleEndian.Uint64(buf[8:]))
		reclen := int(binary.LittleEndian.Uint16(buf[16:]))
		name := string(buf[19:reclen])
		name = name[:strings.IndexByte(name, 0)]
		names = append(names, name)
		if name == "." || name == ".." {
			off = -1
		}
		offs = append(offs, off)
		buf = buf[reclen:]
	}
	return names, offs
}

// TestDirOffsetsKernel compares a directory stream on iovfs's tmpfs with
// one on a kernel tmpfs while the directory changes under it: random
// sequences of creates, unlinks, renames (to a free name, over a name,
// RENAME_EXCHANGE, RENAME_WHITEOUT) between getdents calls with small
// buffers, seeks back to a d_off seen earlier (seekdir) and rewinds. Every
// getdents result (count, names, order and d_off values) must match.
// Then the loop of xfstests' readdir-while-renames: every entry a
// buffered listing returns is renamed away and back.
func TestDirOffsetsKernel(t *testing.T) {
	testenv.RequireRoot(t, "mounting a kernel tmpfs")
	host := hostTmpfs(t)
	p, err := iovfs.New()
	must(t, err)
	seqs, steps := 2000, 60
	if testenv.Quick() {
		seqs = 300
	}
	compared := 0
	for seq := range seqs {
		r := rand.New(rand.NewPCG(uint64(seq), 7))
		hdir := fmt.Sprintf("%s/s%d", host, seq)
		odir := fmt.Sprintf("/tmp/s%d", seq)
		must(t, unix.Mkdir(hdir, 0o755))
		must(t, p.Mkdir(odir, 0o755))
		sides := [2]dirSide{hostDirSide(t, hdir), ourDirSide(t, p, odir)}
		name := func() string { return fmt.Sprintf("n%d", r.IntN(12)) }
		var seen []int64 // d_off values the host gave
		var log []string
		for range steps {
			var what string
			var res [2]string
			switch k := r.IntN(10); {
			case k < 2:
				n := name()
				what = "create " + n
				for i, s := range sides {
					res[i] = fmt.Sprint(errnoOf(s.create(n)))
				}
			case k < 3:
				n := name()
				what = "unlink " + n
				for i, s := range sides {
					res[i] = fmt.Sprint(errnoOf(s.unlink(n)))
				}
			case k < 5:
				a, b := name(), name()
				fl := []uint{0, 0, unix.RENAME_NOREPLACE, unix.RENAME_EXCHANGE, unix.RENAME_WHITEOUT}[r.IntN(5)]
				what = fmt.Sprintf("rename %s %s %#x", a, b, fl)
				for i, s := range sides {
					res[i] = fmt.Sprint(errnoOf(s.rename(a, b, fl)))
				}
			case k < 6 && len(seen) > 0:
				off := seen[r.IntN(len(seen))]
				if r.IntN(4) == 0 {
					off = 0
				}
				what = fmt.Sprintf("seek %d", off)
				for i, s := range sides {
					res[i] = fmt.Sprint(errnoOf(s.seek(off)))
				}
			default:
				size := 24 + r.IntN(80)
				what = fmt.Sprintf("getdents %d", size)
				for i, s := range sides {
					buf := make([]byte, size)
					n, err := s.getdents(buf)
					if err != nil || n < 0 {
						res[i] = fmt.Sprint(errnoOf(err))
						continue
					}
					names, offs := direntsOf(buf[:n])
					res[i] = fmt.Sprint(names, offs)
					if i == 0 {
						for _, o := range offs {
							if o > 0 {
								seen = append(seen, o)
							}
						}
					}
				}
			}
			log = append(log, what+": "+res[0])
			compared++
			if res[0] != res[1] {
				t.Fatalf("sequence %d: %s\n%s: kernel %s, iovfs %s", seq, strings.Join(log, "\n"), what, res[0], res[1])
			}
		}
	}

	// readdir-while-renames, with glibc's 32 KiB getdents buffer.
	const files = 2000
	counts := [2]int{}
	lists := [2][]string{}
	hdir, odir := host+"/rw", "/tmp/rw"
	must(t, unix.Mkdir(hdir, 0o755))
	must(t, p.Mkdir(odir, 0o755))
	for i, s := range [2]dirSide{hostDirSide(t, hdir), ourDirSide(t, p, odir)} {
		for f := 1; f <= files; f++ {
			must(t, s.create(fmt.Sprint(f)))
		}
		buf := make([]byte, 32<<10)
		for counts[i] <= 3*files {
			n, err := s.getdents(buf)
			must(t, err)
			if n == 0 {
				break
			}
			names, _ := direntsOf(buf[:n])
			for _, name := range names {
				counts[i]++
				lists[i] = append(lists[i], name)
				if name == "." || name == ".." {
					continue
				}
				must(t, s.rename(name, "TEMPFILE", 0))
				must(t, s.rename("TEMPFILE", name, 0))
			}
		}
	}
	if counts[0] != counts[1] || strings.Join(lists[0], " ") != strings.Join(lists[1], " ") {
		t.Errorf("readdir while renaming: kernel listed %d entries, iovfs %d", counts[0], counts[1])
	}
	if counts[1] > 3*files {
		t.Errorf("readdir while renaming did not end: %d entries", counts[1])
	}
	t.Logf("%d calls compared in %d sequences; readdir while renaming listed %d entries on both", compared, seqs, counts[0])
}

// TestDirOffsetsRenameRace lists a directory again and again while
// goroutines rename its entries away and back and create and remove
// others: every listing ends, within three times the entries, and lists
// every entry that no goroutine touches.
func TestDirOffsetsRenameRace(t *testing.T) {
	p, err := iovfs.New()
	must(t, err)
	must(t, p.Mkdir("/tmp/race", 0o755))
	const n = 300
	for i := range n {
		fd, err := p.Open(fmt.Sprintf("/tmp/race/f%d", i), unix.O_CREAT|unix.O_WRONLY, 0o644)
		must(t, err)
		p.Close(fd)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q, _ := p.Fork()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a := fmt.Sprintf("/tmp/race/f%d", (i*4+w)%(n/2)) // the first half moves
				b := fmt.Sprintf("/tmp/race/t%d", w)
				if q.Rename(a, b) == nil {
					q.Rename(b, a)
				}
				c := fmt.Sprintf("/tmp/race/c%d", w)
				if fd, err := q.Open(c, unix.O_CREAT|unix.O_WRONLY, 0o644); err == nil {
					q.Close(fd)
					q.Unlink(c)
				}
			}
		}()
	}
	rounds := 100
	if raceEnabled {
		rounds = 20
	}
	buf := make([]byte, 512)
	for range rounds {
		fd, err := p.Open("/tmp/race", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		must(t, err)
		seen := map[string]int{}
		total := 0
		for total <= 3*n {
			k, err := p.Getdents64(fd, buf)
			must(t, err)
			if k == 0 {
				break
			}
			names, _ := direntsOf(buf[:k])
			for _, name := range names {
				seen[name]++
				total++
			}
		}
		p.Close(fd)
		if total > 3*n {
			t.Fatalf("a listing of %d entries gave more than %d", n, 3*n)
		}
		for i := n / 2; i < n; i++ {
			if seen[fmt.Sprintf("f%d", i)] == 0 {
				t.Fatalf("f%d, never renamed, was not listed", i)
			}
		}
	}
	close(stop)
	wg.Wait()
}
