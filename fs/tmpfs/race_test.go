package tmpfs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestConcurrentFile runs readers and writers on one file. Every write
// fills whole pages with one byte value, so a reader that sees a page
// with two values saw a torn write. Run it with -race.
func TestConcurrentFile(t *testing.T) {
	fs, f, h := newFile(t, Options{SizeLimit: 64 * pageSize})
	const pages = 16
	mustWrite(t, h, make([]byte, pages*pageSize), 0)
	iters := 3000
	if testing.Short() {
		iters = 300
	}
	var wg sync.WaitGroup
	run := func(fn func(r *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
			for range iters {
				fn(r)
			}
		}()
	}
	for range 3 { // readers
		run(func(r *rand.Rand) {
			buf := make([]byte, pageSize)
			off := int64(r.IntN(pages)) * pageSize
			var n int
			if r.IntN(2) == 0 {
				n, _ = h.Read(buf, off)
			} else {
				n, _ = h.ReadIter(iov.Vec([][]byte{buf[:100], buf[100:]}), off)
			}
			for _, b := range buf[:n] {
				if b != buf[0] {
					t.Errorf("torn page at %d", off)
					return
				}
			}
			f.Stat()
			h.Llseek(0, off, unix.SEEK_HOLE)
		})
	}
	for w := range 2 { // writers
		run(func(r *rand.Rand) {
			p := bytes.Repeat([]byte{byte(w*100 + 1 + r.IntN(50))}, pageSize)
			off := int64(r.IntN(pages)) * pageSize
			switch r.IntN(4) {
			case 0:
				h.Write(p, off)
			case 1:
				h.WriteIter(iov.Vec([][]byte{p[:10], p[10:]}), off)
			case 2:
				f.Setattr(vfs.SetAttr{Valid: vfs.SetSize, Size: int64(r.IntN(pages+1)) * pageSize}, root0)
			case 3:
				if st, _ := f.Stat(); st.Size < pages*pageSize {
					h.Append(iov.Buf(p))
				}
			}
		})
	}
	wg.Wait()
	st := mustStat(t, f)
	if pages, _ := fs.Usage(); st.Blocks != pages*8 {
		t.Fatalf("file holds %d blocks, fs counts %d pages", st.Blocks, pages)
	}
}

// TestConcurrentDirs creates, links, unlinks, renames (within and across
// directories, files and directories, in both directions) and removes
// directories while others look up and list, through the VFS, which holds
// the directory locks tmpfs relies on. Afterwards the tree must be
// consistent: link counts, inode counts, and parent pointers. Run it with
// -race; a lock-order bug shows as a deadlock.
func TestConcurrentDirs(t *testing.T) {
	fs := New(Options{})
	p := vfs.NewProc(vfs.NewNamespace(fs))
	for _, d := range []string{"/a", "/b"} {
		if err := p.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dirs := []string{"", "/a", "/b"}
	iters := 10000
	if testing.Short() {
		iters = 2000
	}
	watchdog := time.AfterFunc(2*time.Minute, func() { panic("deadlock: TestConcurrentDirs did not finish") })
	defer watchdog.Stop()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 2))
			for range iters {
				d := dirs[rnd.IntN(len(dirs))]
				nd := dirs[rnd.IntN(len(dirs))]
				name := fmt.Sprintf("%s/n%d", d, rnd.IntN(6))
				name2 := fmt.Sprintf("%s/n%d", nd, rnd.IntN(6))
				switch rnd.IntN(9) {
				case 0:
					if fd, err := p.Open(name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644); err == nil {
						p.Close(fd)
					}
				case 1:
					p.Mkdir(name, 0o755)
				case 2:
					p.Unlink(name)
				case 3:
					p.Rmdir(name)
				case 4:
					p.Rename(name, name2)
				case 5:
					p.Link(name, name2)
				case 6: // move a or b below the other and back
					if rnd.IntN(2) == 0 {
						p.Rename("/a", "/b/a")
						p.Rename("/b/a", "/a")
					} else {
						p.Rename("/b", "/a/b")
						p.Rename("/a/b", "/b")
					}
				case 7:
					if fd, err := p.Open(d+"/", unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
						ents, _ := p.Getdents(fd)
						for _, e := range ents {
							p.Lstat(d + "/" + e.Name)
						}
						p.Close(fd)
					}
				case 8:
					p.Lstat(name)
					p.Stat(d + "/")
				}
			}
		}()
	}
	wg.Wait()
	checkTree(t, fs)
}

// checkTree walks fs and checks nlink of every node and the inode count.
func checkTree(t *testing.T, fs *FS) {
	t.Helper()
	links := map[node]int{}
	var walk func(d *Dir)
	walk = func(d *Dir) {
		subdirs := 0
		d.ReadDir(0, func(e vfs.Dirent) bool {
			n := lookup(t, d, e.Name).(node)
			links[n]++
			if sub, ok := n.(*Dir); ok {
				subdirs++
				if up, _ := sub.Lookup(".."); up != d {
					t.Errorf("%s/.. is not its parent", e.Name)
				}
				walk(sub)
			}
			return true
		})
		if st := mustStat(t, d); st.Nlink != uint64(2+subdirs) {
			t.Errorf("dir %d nlink %d, has %d subdirectories", st.Ino, st.Nlink, subdirs)
		}
	}
	walk(fs.root)
	for n, k := range links {
		if _, ok := n.(*Dir); ok {
			if k != 1 {
				t.Errorf("directory %d has %d names", n.base().ino, k)
			}
			continue
		}
		if st := mustStat(t, n); st.Nlink != uint64(k) {
			t.Errorf("node %d nlink %d, has %d names", st.Ino, st.Nlink, k)
		}
	}
	// nr_inodes counts each inode once and, as Linux's shmem_link does,
	// each extra hard link of a non-directory once more; +1 is the root.
	want := 1
	for n, k := range links {
		if _, ok := n.(*Dir); ok {
			want++
		} else {
			want += k
		}
	}
	if _, inodes := fs.Usage(); inodes != int64(want) {
		t.Errorf("fs counts %d inodes, tree has %d nodes and extra links", inodes, want)
	}
}
