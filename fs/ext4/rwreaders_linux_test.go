package ext4_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
)

// Readers beside the Writer: on a read-write mount, reads take no lock
// (disk/live.go). A reader must never return bytes of another file, nor
// see a directory torn by a change. Every file's data is a pattern of its
// own inode number and offset (patWord), so any byte a read returns is
// either that pattern or 0 (a hole, an extension); a marker writer keeps
// taking the blocks other files free and filling them with a marker that
// no read of another file may return.

// patWord is the 8-byte word at byte offset off of a file of inode ino.
func patWord(ino uint64, off int64) uint64 { return ino<<40 | uint64(off/8)&(1<<40-1) }

// fillPattern writes ino's pattern for the bytes at off into p.
func fillPattern(p []byte, ino uint64, off int64) {
	var w [8]byte
	for i := range p {
		o := off + int64(i)
		binary.LittleEndian.PutUint64(w[:], patWord(ino, o))
		p[i] = w[o%8]
	}
}

// checkPattern reports the first byte of p, read at off from the file of
// inode ino, that is neither ino's pattern nor 0.
func checkPattern(p []byte, ino uint64, off int64) (int, bool) {
	var w [8]byte
	for i, b := range p {
		if b == 0 {
			continue
		}
		o := off + int64(i)
		binary.LittleEndian.PutUint64(w[:], patWord(ino, o))
		if b != w[o%8] {
			return i, false
		}
	}
	return 0, true
}

// marker fills the blocks the marker writer takes over.
var marker = bytes.Repeat([]byte("FREED-BLOCK-REUSED-BY-ANOTHER-FILE!"), 4096/35+1)[:4096]

// rwMount makes an image of sizeMiB with 4 KiB blocks and mounts it
// read-write at /mnt over src with opts; it returns the process.
func rwMount(t *testing.T, sizeMiB int, src source, opts string) *vfs.Proc {
	t.Helper()
	needMke2fs(t)
	img := filepath.Join(t.TempDir(), "rw.img")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", img, fmt.Sprintf("%dM", sizeMiB)).CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	if src != viaRAM {
		// The loop sources attach the image read-only; a read-write
		// mount needs it writable.
		testenv.RequireRoot(t, "loop devices")
	}
	p, dev, done := newProcRW(t, img, src)
	err := p.Mount(dev, "/mnt", "ext4", 0, opts)
	done()
	if err != nil {
		t.Fatalf("mount %v %q: %v", src, opts, err)
	}
	t.Cleanup(func() {
		if err := p.Unmount("/mnt", 0); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	return p
}

// newProcRW is newProc with the loop devices bound read-write.
func newProcRW(t testing.TB, img string, src source) (*vfs.Proc, string, func()) {
	t.Helper()
	if src == viaRAM {
		return newProc(t, img, src)
	}
	p, dev, done := newProc(t, img, viaRAM) // a process with a RAM disk, unused
	done()
	_ = dev
	var fd int
	var err error
	if src == viaTmpfsLoop {
		b, rerr := os.ReadFile(img)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if fd, err = p.Open("/tmp/img", unix.O_RDWR|unix.O_CREAT, 0o644); err != nil {
			t.Fatal(err)
		}
		if n, err := p.Pwrite(fd, b, 0); n != len(b) {
			t.Fatalf("write /tmp/img: %d, %v", n, err)
		}
	} else {
		f, oerr := os.OpenFile(img, os.O_RDWR, 0)
		if oerr != nil {
			t.Fatal(oerr)
		}
		fd, err = p.ImportFile(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	lfd, err := p.Open("/dev/loop0", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := unix.LoopConfig{Fd: uint32(fd)}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		t.Fatalf("LOOP_CONFIGURE: %v", err)
	}
	p.Close(fd)
	return p, "/dev/loop0", func() { p.Close(lfd) }
}

// readersRun is how long the race tests churn: a quick run by default,
// longer under IOVFS_LONG=1.
func readersRun() time.Duration {
	if testenv.Long() {
		return 6 * time.Second
	}
	return 1500 * time.Millisecond
}

// TestRWReadersNeverSeeOtherFiles: on read-write mounts (a RAM disk, a
// loop device over a host file, one over a tmpfs file; plain and dax),
// writers write, extend, truncate (down and up) and delete files while
// readers pread and preadv them through descriptors they opened, and a
// marker writer keeps taking the freed blocks (each fsync commits, so
// they can be reused) and filling them with a marker. Every byte a
// reader gets must be its file's own pattern or 0: never the marker,
// never another file's bytes.
func TestRWReadersNeverSeeOtherFiles(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	for _, tc := range []struct {
		src  source
		opts string
	}{{viaRAM, ""}, {viaRAM, "dax"}, {viaLoop, ""}, {viaLoop, "dax"}, {viaTmpfsLoop, ""}} {
		t.Run(fmt.Sprintf("%v/%s", tc.src, tc.opts), func(t *testing.T) {
			p := rwMount(t, 24, tc.src, tc.opts)
			const files = 6
			var stop atomic.Bool
			var wg sync.WaitGroup
			var reads, checked atomic.Int64
			fail := func(format string, args ...any) {
				t.Errorf(format, args...)
				stop.Store(true)
			}
			name := func(i int) string { return fmt.Sprintf("/mnt/f%d", i) }
			// Writers: one per file.
			for i := 0; i < files; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					rnd := rand.New(rand.NewPCG(uint64(i), 1))
					buf := make([]byte, 256<<10)
					for !stop.Load() {
						fd, err := p.Open(name(i), unix.O_CREAT|unix.O_RDWR, 0o644)
						if err != nil {
							fail("create %s: %v", name(i), err)
							return
						}
						var st vfs.Stat
						if st, err = p.Fstat(fd); err != nil {
							fail("fstat: %v", err)
							return
						}
						for k := 0; k < 8 && !stop.Load(); k++ {
							off := int64(rnd.IntN(512)) << 10
							n := 4096 + rnd.IntN(len(buf)-4096)
							fillPattern(buf[:n], st.Ino, off)
							switch rnd.IntN(5) {
							case 0, 1: // write (and extend)
								if _, err := p.Pwrite(fd, buf[:n], off); err != nil && err != syscall.ENOSPC {
									fail("pwrite: %v", err)
								}
							case 2: // append
								end, _ := p.Seek(fd, 0, unix.SEEK_END)
								fillPattern(buf[:n], st.Ino, end)
								if _, err := p.Pwrite(fd, buf[:n], end); err != nil && err != syscall.ENOSPC {
									fail("append: %v", err)
								}
							case 3: // truncate down, or up (a hole)
								if err := p.Ftruncate(fd, int64(rnd.IntN(768))<<10); err != nil {
									fail("ftruncate: %v", err)
								}
							case 4:
								p.Fsync(fd) // commit: freed blocks may be taken again
							}
						}
						p.Close(fd)
						if rnd.IntN(2) == 0 {
							if err := p.Unlink(name(i)); err != nil && err != syscall.ENOENT {
								fail("unlink: %v", err)
							}
						}
					}
				}(i)
			}
			// The marker writer: takes freed blocks and marks them.
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; !stop.Load(); k++ {
					m := fmt.Sprintf("/mnt/marker%d", k%4)
					fd, err := p.Open(m, unix.O_CREAT|unix.O_RDWR|unix.O_TRUNC, 0o644)
					if err != nil {
						fail("marker: %v", err)
						return
					}
					for off := int64(0); off < 2<<20 && !stop.Load(); off += int64(len(marker)) {
						if _, err := p.Pwrite(fd, marker, off); err != nil {
							break // ENOSPC: the others hold the space
						}
					}
					p.Fsync(fd)
					p.Close(fd)
				}
			}()
			// Readers.
			for r := 0; r < 4; r++ {
				wg.Add(1)
				go func(r int) {
					defer wg.Done()
					rnd := rand.New(rand.NewPCG(uint64(r), 2))
					buf := make([]byte, 128<<10)
					for !stop.Load() {
						fd, err := p.Open(name(rnd.IntN(files)), unix.O_RDONLY, 0)
						if err != nil {
							continue // ENOENT between an unlink and a create
						}
						st, err := p.Fstat(fd)
						if err != nil {
							fail("fstat: %v", err)
							return
						}
						for k := 0; k < 16; k++ {
							off := int64(rnd.IntN(800)) << 10
							want := 1 + rnd.IntN(len(buf)-1)
							var n int
							if k%2 == 0 {
								n, err = p.Pread(fd, buf[:want], off)
							} else {
								// preadv with odd segments (ReadIter)
								a, b := buf[:want/3], buf[want/3:want]
								n, err = p.Preadv(fd, [][]byte{a, b}, off)
							}
							if err != nil {
								fail("read of %d at %d: %v", st.Ino, off, err)
								break
							}
							reads.Add(1)
							checked.Add(int64(n))
							if i, ok := checkPattern(buf[:n], st.Ino, off); !ok {
								what := "another file's bytes"
								if bytes.Contains(buf[:n], marker[:32]) {
									what = "the marker"
								}
								fail("inode %d read at %d: byte %d of %d is %q...: %s", st.Ino, off, i, n, buf[i:min(i+16, n)], what)
								break
							}
						}
						p.Close(fd)
					}
				}(r)
			}
			time.Sleep(readersRun())
			stop.Store(true)
			wg.Wait()
			if reads.Load() == 0 {
				t.Errorf("no read ran")
			}
			t.Logf("%d reads, %d bytes checked", reads.Load(), checked.Load())
		})
	}
}

// TestRWDirReadersNeverTorn: on a read-write mount, writers add and
// remove entries of one directory (growing it into an htree and
// splitting its leaves) and rename files in and out of it while readers
// list it (getdents and the VFS's own ReadDir), look its permanent names
// up and stat them. Every listing must hold each permanent name exactly
// once and nothing but names ever made there.
func TestRWDirReadersNeverTorn(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	for _, src := range []source{viaRAM, viaLoop} {
		t.Run(src.String(), func(t *testing.T) {
			p := rwMount(t, 32, src, "")
			if err := p.Mkdir("/mnt/d", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := p.Mkdir("/mnt/other", 0o755); err != nil {
				t.Fatal(err)
			}
			const perm = 50
			for i := 0; i < perm; i++ {
				fd, err := p.Open(fmt.Sprintf("/mnt/d/perm-%03d", i), unix.O_CREAT|unix.O_WRONLY, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				p.Close(fd)
			}
			var stop atomic.Bool
			var wg sync.WaitGroup
			var listings atomic.Int64
			fail := func(format string, args ...any) {
				t.Errorf(format, args...)
				stop.Store(true)
			}
			// Writers: temporaries with long names (leaves fill and split).
			for g := 0; g < 3; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					rnd := rand.New(rand.NewPCG(uint64(g), 3))
					long := bytes.Repeat([]byte{'x'}, 120)
					for !stop.Load() {
						n := fmt.Sprintf("/mnt/d/tmp-%d-%03d-%s", g, rnd.IntN(300), long)
						switch rnd.IntN(3) {
						case 0:
							if fd, err := p.Open(n, unix.O_CREAT|unix.O_WRONLY, 0o644); err == nil {
								p.Close(fd)
							}
						case 1:
							p.Unlink(n)
						case 2:
							o := fmt.Sprintf("/mnt/other/tmp-%d-%03d", g, rnd.IntN(300))
							if rnd.IntN(2) == 0 {
								p.Rename(n, o)
							} else {
								p.Rename(o, n)
							}
						}
					}
				}(g)
			}
			valid := func(name string) bool {
				var g, k int
				return len(name) > 4 && (name[:5] == "perm-" || name[:4] == "tmp-" && fmt.Sprint(len(name)) != "" &&
					func() bool { _, err := fmt.Sscanf(name, "tmp-%d-%d-", &g, &k); return err == nil && g < 3 && k < 300 }())
			}
			// Readers: getdents through a descriptor, and lookups.
			for r := 0; r < 4; r++ {
				wg.Add(1)
				go func(r int) {
					defer wg.Done()
					rnd := rand.New(rand.NewPCG(uint64(r), 4))
					for !stop.Load() {
						if r%2 == 0 {
							names, err := getdentsNames(p, "/mnt/d")
							if err != nil {
								fail("getdents: %v", err)
								return
							}
							seen := map[string]int{}
							for _, n := range names {
								seen[n]++
								if !valid(n) {
									fail("listing holds %q", n)
									return
								}
							}
							for i := 0; i < perm; i++ {
								if c := seen[fmt.Sprintf("perm-%03d", i)]; c != 1 {
									fail("listing holds perm-%03d %d times", i, c)
									return
								}
							}
							listings.Add(1)
						} else {
							n := fmt.Sprintf("/mnt/d/perm-%03d", rnd.IntN(perm))
							if _, err := p.Stat(n); err != nil {
								fail("stat %s: %v", n, err)
								return
							}
						}
					}
				}(r)
			}
			time.Sleep(readersRun())
			stop.Store(true)
			wg.Wait()
			if listings.Load() == 0 {
				t.Errorf("no listing ran")
			}
			t.Logf("%d listings", listings.Load())
		})
	}
}

// getdentsNames lists path through getdents, "." and ".." left out.
func getdentsNames(p *vfs.Proc, path string) ([]string, error) {
	fd, err := p.Open(path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer p.Close(fd)
	var names []string
	for {
		ds, err := p.Getdents(fd)
		if err != nil {
			return nil, err
		}
		if len(ds) == 0 {
			return names, nil
		}
		for _, d := range ds {
			if d.Name != "." && d.Name != ".." {
				names = append(names, d.Name)
			}
		}
	}
}
