package ext4_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/vfs"
)

// mountFS mounts dev at /mnt with opts through ext4.Mount and MountFS, so
// the test holds the *ext4.FS and its cache figures.
func mountFS(t testing.TB, p *vfs.Proc, dev, opts string) *ext4.FS {
	t.Helper()
	f, err := ext4.Mount(vfs.MountRequest{Proc: p, Source: dev, Flags: unix.MS_RDONLY, Data: opts})
	if err != nil {
		t.Fatalf("mount %s %q: %v", dev, opts, err)
	}
	fs := f.(*ext4.FS)
	if err := p.Namespace().MountFS("/mnt", fs, true); err != nil {
		t.Fatal(err)
	}
	return fs
}

// listAll is dirents of dir, failing the test on an error.
func listAll(t testing.TB, p *vfs.Proc, dir string) []vfs.Dirent {
	t.Helper()
	all, err := dirents(p, dir)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// dirents lists dir with getdents until empty.
func dirents(p *vfs.Proc, dir string) ([]vfs.Dirent, error) {
	fd, err := p.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer p.Close(fd)
	var all []vfs.Dirent
	for {
		ds, err := p.Getdents(fd)
		if err != nil {
			return all, err
		}
		if len(ds) == 0 {
			return all, nil
		}
		all = append(all, ds...)
	}
}

// TestBufferCacheOption: bcache= gives the mount a cache of that budget,
// bcache=0 turns the cache off, a dax mount has none, the default is the
// process's cache, and a bad size is EINVAL.
func TestBufferCacheOption(t *testing.T) {
	img := mkImage(t, 4096, populate, "-t", "ext4", "-b", "1024")
	for _, tc := range []struct {
		opts  string
		limit int64 // -1: no cache
	}{{"", block.ProcessCache().Limit()}, {"bcache=256K", 256 << 10}, {"bcache=3M", 3 << 20}, {"bcache=100000", 100000}, {"bcache=0", -1}, {"dax", -1}} {
		p, dev, done := newProc(t, img, viaLoop)
		fs := mountFS(t, p, dev, tc.opts)
		done()
		listAll(t, p, "/mnt")
		st, ok := fs.Volume().CacheStats()
		switch {
		case tc.limit < 0 && ok:
			t.Errorf("%q: has a buffer cache", tc.opts)
		case tc.limit >= 0 && (!ok || st.Limit != tc.limit):
			t.Errorf("%q: cache %v, limit %d, want %d", tc.opts, ok, st.Limit, tc.limit)
		case tc.limit >= 0 && st.Misses == 0:
			t.Errorf("%q: metadata did not go through the cache", tc.opts)
		}
		if err := p.Unmount("/mnt", 0); err != nil {
			t.Fatal(err)
		}
	}
	p, dev, done := newProc(t, img, viaLoop)
	defer done()
	for _, bad := range []string{"bcache=", "bcache=x", "bcache=-1", "bcache=1T"} {
		err := p.Mount(dev, "/mnt", "ext4", unix.MS_RDONLY, bad)
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%q: %v, want EINVAL", bad, err)
			if err == nil {
				p.Unmount("/mnt", 0)
			}
		}
	}
}

// TestGetdentsCachedNoDeviceIO: once a directory has been listed, listing
// it again (from its parsed listing, listcache.go) and lstat'ing its
// entries read nothing from the device.
func TestGetdentsCachedNoDeviceIO(t *testing.T) {
	bigDir := func(t testing.TB, dir string) {
		os.Mkdir(filepath.Join(dir, "huge-dir"), 0o755)
		for i := range 2000 {
			if err := os.WriteFile(filepath.Join(dir, "huge-dir", fmt.Sprintf("entry-with-a-longish-name-%05d", i)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	img := mkImage(t, 4096, bigDir, "-t", "ext4", "-b", "1024", "-N", "4096")
	p, dev, done := newProc(t, img, viaLoop)
	fs := mountFS(t, p, dev, "")
	done()
	defer p.Unmount("/mnt", 0)
	p.Namespace().CountDentryCacheHits(true)
	first := listAll(t, p, "/mnt/huge-dir")
	for _, d := range first[2:] {
		if _, err := p.Lstat("/mnt/huge-dir/" + d.Name); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := fs.Volume().CacheStats()
	dbefore := p.Namespace().DentryCacheStats()
	lbefore := fs.ListingStats()
	second := listAll(t, p, "/mnt/huge-dir")
	for _, d := range second[2:] {
		if _, err := p.Lstat("/mnt/huge-dir/" + d.Name); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := fs.Volume().CacheStats()
	dafter := p.Namespace().DentryCacheStats()
	if len(first) != 2002 || len(second) != len(first) {
		t.Fatalf("listings of %d and %d entries, want 2002", len(first), len(second))
	}
	if after.Misses != before.Misses {
		t.Errorf("the second listing read %d blocks from the device", after.Misses-before.Misses)
	}
	if l := fs.ListingStats(); l.Hits == lbefore.Hits || l.Misses != lbefore.Misses {
		t.Errorf("the second listing: %d getdents from the listing, %d from blocks; want some and none", l.Hits-lbefore.Hits, l.Misses-lbefore.Misses)
	}
	if dafter.Misses != dbefore.Misses || dafter.Hits-dbefore.Hits < 2000 {
		t.Errorf("the second round of lstats: %d dentry misses, %d hits", dafter.Misses-dbefore.Misses, dafter.Hits-dbefore.Hits)
	}
}

// TestExt4LoopRebind: an image is walked and unmounted, the loop device
// is cleared and bound to another image of the same shape, and the new
// mount shows only the new image's bytes and names.
func TestExt4LoopRebind(t *testing.T) {
	fill := func(tag string) func(testing.TB, string) {
		return func(_ testing.TB, dir string) {
			for i := range 40 {
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), []byte(fmt.Sprintf("%s-%d", tag, i)), 0o644)
			}
			os.Mkdir(filepath.Join(dir, "only-"+tag), 0o755)
		}
	}
	imgA := mkImage(t, 2048, fill("A"), "-t", "ext4", "-b", "1024")
	imgB := mkImage(t, 2048, fill("B"), "-t", "ext4", "-b", "1024")
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range []struct{ path, tag string }{{imgA, "A"}, {imgB, "B"}, {imgA, "A"}} {
		f, err := os.Open(img.path)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := p.ImportFile(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		lfd := attachLoop(t, p, fd)
		p.Close(fd)
		mountFS(t, p, "/dev/loop0", "")
		p.Close(lfd) // AUTOCLEAR: the unmount clears the device
		for i := range 40 {
			compareFile(t, p, fmt.Sprintf("/mnt/f%02d", i), []byte(fmt.Sprintf("%s-%d", img.tag, i)))
		}
		names := listDir(t, p, "/mnt")
		other := map[string]string{"A": "B", "B": "A"}[img.tag]
		if !names["only-"+img.tag] || names["only-"+other] {
			t.Errorf("image %s: listing %v", img.tag, names)
		}
		if err := p.Unmount("/mnt", 0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBufferCacheCorpusMemory walks every e2fsprogs image
// (IOVFS_E2FS_CORPUS) mounted with a small buffer cache and with the
// default one: the mount's one budget (bcache=) bounds its cached blocks
// and its parsed directory listings (listcache.go) together, at every
// moment (the cache's peak counts both), and the listings are exactly
// what the cache holds as charges. It logs the largest peaks.
func TestBufferCacheCorpusMemory(t *testing.T) {
	dir := os.Getenv("IOVFS_E2FS_CORPUS")
	if dir == "" {
		t.Skip("IOVFS_E2FS_CORPUS not set; it names shared/testdata/e2fsprogs")
	}
	if raceEnabled {
		// The budgets do not depend on timing; TestVFSCorpus walks the
		// corpus under -race, and the cache's races are block's tests.
		t.Skip("a second walk of the corpus under -race would double its cost")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	walked := 0
	var maxPeak, peakLimit, maxList [2]int64
	var maxName, listName [2]string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		img, err := corpusImage(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		runtime.GC()
		p, err := iovfs.New(iovfs.WithRAMDisks(1, max(4096, (int64(len(img))+4095)&^4095)))
		if err != nil {
			t.Fatal(err)
		}
		fd, _ := p.Open("/dev/ram0", unix.O_RDWR, 0)
		p.Pwrite(fd, img, 0)
		p.Close(fd)
		for i, opts := range []string{"noload,bcache=64K", "noload"} {
			f, err := ext4.Mount(vfs.MountRequest{Proc: p, Source: "/dev/ram0", Flags: unix.MS_RDONLY, Data: opts})
			if err != nil {
				break // refused images are TestVFSCorpus's business
			}
			fs := f.(*ext4.FS)
			if err := p.Namespace().MountFS("/mnt", fs, true); err != nil {
				t.Fatal(err)
			}
			budget := 5 * time.Second
			var w corpusWalk
			w.walk(p, "/mnt", time.Now().Add(budget))
			st, ok := fs.Volume().CacheStats()
			if !ok {
				t.Fatalf("%s %q: no buffer cache", e.Name(), opts)
			}
			ls := fs.ListingStats()
			if st.Peak > st.Limit || st.Bytes > st.Limit || ls.Limit != st.Limit {
				t.Errorf("%s %q: blocks and listings peak %d, now %d bytes, over their limit %d (listings' limit %d)", e.Name(), opts, st.Peak, st.Bytes, st.Limit, ls.Limit)
			}
			if st.ChargedBytes != ls.Bytes || ls.Peak > st.Peak {
				t.Errorf("%s %q: the cache holds %d bytes of charges, the listings %d (peak %d, the cache's %d)", e.Name(), opts, st.ChargedBytes, ls.Bytes, ls.Peak, st.Peak)
			}
			if st.Peak > maxPeak[i] {
				maxPeak[i], peakLimit[i], maxName[i] = st.Peak, st.Limit, e.Name()
			}
			if ls.Peak > maxList[i] {
				maxList[i], listName[i] = ls.Peak, e.Name()
			}
			if i == 0 {
				walked++
			}
			if err := p.Unmount("/mnt", 0); err != nil {
				t.Errorf("%s: unmount: %v", e.Name(), err)
			}
			if st, _ := fs.Volume().CacheStats(); st.Bytes != 0 {
				t.Errorf("%s %q: %d bytes still cached after the unmount", e.Name(), opts, st.Bytes)
			}
		}
	}
	if walked == 0 {
		t.Fatal("no corpus image mounted")
	}
	t.Logf("%d images walked; largest peak of blocks and listings together: %d bytes with bcache=64K (%s), %d bytes with the default budget (%s, whose budget is %d)",
		walked, maxPeak[0], maxName[0], maxPeak[1], maxName[1], peakLimit[1])
	t.Logf("largest listings peak alone: %d bytes with bcache=64K (%s), %d with the default budget (%s)",
		maxList[0], listName[0], maxList[1], listName[1])
}
