package vfstest

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// The concurrency cases: namespace changes from several goroutines in
// shared directories, after which the tree must be consistent, and the
// openat2 confinement race.

func init() {
	add(
		testCase{name: "concurrent changes", needs: func(c Caps) bool { return c.Files && c.Dirs }, run: concurrentChanges},
		testCase{name: "no rename cycles", needs: func(c Caps) bool { return c.Rename && c.Dirs }, run: renameCycles},
		testCase{name: "O_CREAT races", needs: func(c Caps) bool { return c.Files }, run: createRaces},
		testCase{name: "confinement race", needs: func(c Caps) bool { return c.Rename && c.Dirs && c.Files }, run: func(e *env) {
			RaceConfinement(e.t, e.root, "/race", e.caps.RaceFor)
		}},
	)
}

// concurrentChanges runs creates, mkdirs, links, unlinks, rmdirs and
// renames (of files and directories, within and between three shared
// directories, one of which moves below another and back) from 8
// goroutines for RaceFor, with listings and lookups beside them. Then it
// checks the tree: every listed name can be looked up, no name is listed
// twice, each directory's ".." is its parent, and the link counts agree
// with the names found.
func concurrentChanges(e *env) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	r := e.root
	dirs := []string{"/a", "/b", "/a/c"}
	for _, d := range dirs {
		e.must("mkdir "+d, r.Mkdir(d, 0o777))
	}
	var stop sync.WaitGroup
	deadline := time.Now().Add(e.caps.RaceFor)
	ops := func(seed uint64) {
		defer stop.Done()
		rnd := rand.New(rand.NewPCG(seed, 7))
		for n := 0; time.Now().Before(deadline) || n < 200; n++ {
			d := dirs[rnd.IntN(len(dirs))]
			nd := dirs[rnd.IntN(len(dirs))]
			name := fmt.Sprintf("%s/n%d", d, rnd.IntN(8))
			name2 := fmt.Sprintf("%s/n%d", nd, rnd.IntN(8))
			switch rnd.IntN(10) {
			case 0, 1:
				if fd, err := r.Open(name, unix.O_CREAT|unix.O_WRONLY, 0o644); err == nil {
					r.Write(fd, []byte(name))
					r.Close(fd)
				}
			case 2:
				r.Mkdir(name, 0o755)
			case 3:
				r.Unlink(name)
			case 4:
				r.Rmdir(name)
			case 5, 6:
				if e.caps.Rename {
					r.Rename(name, name2)
				}
			case 7:
				if e.caps.HardLinks {
					r.Link(name, name2)
				}
			case 8:
				if e.caps.Rename { // /a/c moves to /b/c and back
					if r.Rename("/a/c", "/b/c") == nil {
						r.Rename("/b/c", "/a/c")
					}
				}
			case 9:
				if fd, err := r.Open(d, unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
					ents, _ := r.Getdents(fd)
					for _, x := range ents {
						r.Lstat(d + "/" + x.Name)
					}
					r.Close(fd)
				}
			}
		}
	}
	for i := range 8 {
		stop.Add(1)
		go ops(uint64(i))
	}
	stop.Wait()
	checkTree(e, r)
}

// checkTree walks the whole tree from / and checks it.
func checkTree(e *env, p *vfs.Proc) {
	links := map[uint64]int{}
	nlink := map[uint64]uint64{}
	var walk func(path string)
	walk = func(path string) {
		dir := e.lstat(p, path)
		subdirs := 0
		for name, ino := range e.names(p, path) {
			child := strings.TrimSuffix(path, "/") + "/" + name
			st, err := p.Lstat(child)
			if err != nil {
				e.t.Errorf("%s is listed, but lstat gives %v", child, err)
				continue
			}
			if ino != 0 && st.Ino != ino {
				e.t.Errorf("%s is listed as inode %d, lstat gives %d", child, ino, st.Ino)
			}
			if st.IsDir() {
				subdirs++
				if up := e.lstat(p, child+"/.."); up.Ino != dir.Ino {
					e.t.Errorf("%s/.. is inode %d, its parent is %d", child, up.Ino, dir.Ino)
				}
				walk(child)
				continue
			}
			links[st.Ino]++
			nlink[st.Ino] = st.Nlink
		}
		if e.caps.DirNlink && dir.Nlink != uint64(2+subdirs) {
			e.t.Errorf("%s: nlink %d, has %d subdirectories", path, dir.Nlink, subdirs)
		}
	}
	walk("/")
	for ino, k := range links {
		if nlink[ino] != uint64(k) {
			e.t.Errorf("inode %d: nlink %d, has %d names", ino, nlink[ino], k)
		}
	}
}

// renameCycles moves /p below /q and /q below /p from two goroutines at
// once, and back: each rename alone is legal, but both together would
// make a cycle cut off from the root unless renames between directories
// are serialised while their ancestry is checked (Linux's
// s_vfs_rename_mutex). Afterwards both must still hang from the root.
func renameCycles(e *env) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	r := e.root
	e.must("mkdir /p", r.Mkdir("/p", 0o755))
	e.must("mkdir /q", r.Mkdir("/q", 0o755))
	deadline := time.Now().Add(e.caps.RaceFor / 2)
	var wg sync.WaitGroup
	for _, pair := range [][2]string{{"p", "q"}, {"q", "p"}} {
		wg.Add(1)
		go func(a, b string) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				// a into b, then back; from wherever a and b are now.
				if r.Rename("/"+a, "/"+b+"/"+a) == nil {
					r.Rename("/"+b+"/"+a, "/"+a)
				}
			}
		}(pair[0], pair[1])
	}
	wg.Wait()
	found := map[string]bool{}
	var walk func(path string, depth int)
	walk = func(path string, depth int) {
		if depth > 8 {
			e.t.Errorf("%s: the tree is deeper than the renames can make it", path)
			return
		}
		for name := range e.names(r, path) {
			child := strings.TrimSuffix(path, "/") + "/" + name
			found[name] = true
			if st, err := r.Lstat(child); err == nil && st.IsDir() {
				walk(child, depth+1)
			}
		}
	}
	walk("/", 0)
	if !found["p"] || !found["q"] {
		e.t.Errorf("after concurrent cross renames /p or /q is no longer reachable from / (found p %v, q %v): a cycle", found["p"], found["q"])
	}
}

// createRaces opens the same names with O_CREAT (without O_EXCL) from
// several goroutines while others unlink them: the lookup and the create
// happen under the directory's lock, so O_CREAT never fails with EEXIST
// (Linux's lookup_open), and an O_CREAT|O_EXCL that succeeds made the file.
func createRaces(e *env) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	r := e.root
	deadline := time.Now().Add(e.caps.RaceFor / 2)
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := map[string]int{}
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				name := fmt.Sprintf("/c%d", i%4)
				var err error
				switch w % 3 {
				case 0, 1:
					var fd int
					if fd, err = r.Open(name, unix.O_CREAT|unix.O_RDWR, 0o644); err == nil {
						r.Close(fd)
					}
				case 2:
					r.Unlink(name)
				}
				if err != nil {
					mu.Lock()
					bad[err.Error()]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for msg, n := range bad {
		e.t.Errorf("O_CREAT without O_EXCL failed %d times: %s", n, msg)
	}
}
