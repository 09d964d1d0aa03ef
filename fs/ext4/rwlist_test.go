package ext4_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/ext4"
	"github.com/iovfs/iovfs/vfs"
)

// TestRWDirListingExact: a read-write mount's directories keep parsed
// listings (rwlist.go), and no getdents after a change returns sees a
// stale one. After each change below, made once both directories are
// listed (so their listings are cached), the next listing of every
// directory it touched must be the model's: create, mkdir, symlink,
// mknod, link, unlink, rmdir, rename within a directory, across
// directories and over an existing name, exchange, enough creates to turn
// a directory into an htree, and a directory removed and made again
// (its inode number may come back). The listings must be in use
// (hits), and a reader listing concurrently with the creates must never
// make the creator's next listing miss its own file.
func TestRWDirListingExact(t *testing.T) {
	fill := func(t testing.TB, dir string) {
		for _, d := range []string{"d", "e", "e/gone"} {
			os.Mkdir(filepath.Join(dir, d), 0o755)
		}
		for i := range 40 {
			os.WriteFile(filepath.Join(dir, "d", fmt.Sprintf("file-%02d", i)), nil, 0o644)
		}
		os.WriteFile(filepath.Join(dir, "e", "x"), nil, 0o644)
	}
	img := mkImage(t, 8192, fill, "-t", "ext4", "-b", "1024")
	p, dev, done := newProc(t, img, viaRAM)
	f, err := ext4.Mount(vfs.MountRequest{Proc: p, Source: dev})
	done()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Namespace().MountFS("/mnt", f, false); err != nil {
		t.Fatal(err)
	}
	defer p.Unmount("/mnt", 0)
	stats := f.(interface{ ListingStats() ext4.ListingStats }).ListingStats

	model := map[string]map[string]bool{"/mnt/d": {}, "/mnt/e": {"x": true, "gone": true}, "/mnt/e/gone": {}}
	for i := range 40 {
		model["/mnt/d"][fmt.Sprintf("file-%02d", i)] = true
	}
	check := func(what string, dirs ...string) {
		t.Helper()
		for _, dir := range dirs {
			if got := listDir(t, p, dir); !maps.Equal(got, model[dir]) {
				t.Errorf("after %s: %s lists %v, want %v", what, dir, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(model[dir])))
			}
			listDir(t, p, dir) // from its listing, for the next change to find
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check("mount", "/mnt/d", "/mnt/e", "/mnt/e/gone")
	hits := stats().Hits
	check("nothing", "/mnt/d", "/mnt/e")
	if stats().Hits == hits {
		t.Fatalf("listing stats %+v: no getdents was served from a listing", stats())
	}

	fd, err := p.Open("/mnt/d/new", unix.O_CREAT|unix.O_WRONLY, 0o644)
	must(err)
	p.Close(fd)
	model["/mnt/d"]["new"] = true
	check("create", "/mnt/d")
	must(p.Mkdir("/mnt/d/sub", 0o755))
	model["/mnt/d"]["sub"] = true
	model["/mnt/d/sub"] = map[string]bool{}
	check("mkdir", "/mnt/d", "/mnt/d/sub")
	must(p.Symlink("file-00", "/mnt/d/ln"))
	model["/mnt/d"]["ln"] = true
	check("symlink", "/mnt/d")
	must(p.Mknod("/mnt/d/fifo", unix.S_IFIFO|0o644, 0))
	model["/mnt/d"]["fifo"] = true
	check("mknod", "/mnt/d")
	must(p.Link("/mnt/d/file-01", "/mnt/e/hard"))
	model["/mnt/e"]["hard"] = true
	check("link", "/mnt/d", "/mnt/e")
	must(p.Unlink("/mnt/d/file-02"))
	delete(model["/mnt/d"], "file-02")
	check("unlink", "/mnt/d")
	must(p.Rmdir("/mnt/d/sub"))
	delete(model["/mnt/d"], "sub")
	check("rmdir", "/mnt/d")
	must(p.Rename("/mnt/d/file-03", "/mnt/d/renamed"))
	delete(model["/mnt/d"], "file-03")
	model["/mnt/d"]["renamed"] = true
	check("rename in a directory", "/mnt/d")
	must(p.Rename("/mnt/d/file-04", "/mnt/e/moved"))
	delete(model["/mnt/d"], "file-04")
	model["/mnt/e"]["moved"] = true
	check("rename across directories", "/mnt/d", "/mnt/e")
	must(p.Rename("/mnt/e/x", "/mnt/d/file-05"))
	delete(model["/mnt/e"], "x")
	check("rename over a name", "/mnt/d", "/mnt/e")
	must(p.Renameat2(unix.AT_FDCWD, "/mnt/d/file-06", unix.AT_FDCWD, "/mnt/e/moved", unix.RENAME_EXCHANGE))
	check("exchange", "/mnt/d", "/mnt/e")
	must(p.Rmdir("/mnt/e/gone"))
	delete(model["/mnt/e"], "gone")
	must(p.Mkdir("/mnt/e/again", 0o755))
	model["/mnt/e"]["again"] = true
	model["/mnt/e/again"] = map[string]bool{}
	check("rmdir and mkdir (the inode may be the removed one's)", "/mnt/e", "/mnt/e/again")
	fd, err = p.Open("/mnt/e/again/inside", unix.O_CREAT|unix.O_WRONLY, 0o644)
	must(err)
	p.Close(fd)
	model["/mnt/e/again"]["inside"] = true
	check("create in the new directory", "/mnt/e/again")

	// Creates that grow /mnt/d into an htree and split its leaves, with
	// a reader listing it all along.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := dirents(p, "/mnt/d"); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for i := range 300 {
		name := fmt.Sprintf("grown-entry-with-a-long-name-%03d", i)
		fd, err := p.Open("/mnt/d/"+name, unix.O_CREAT|unix.O_WRONLY, 0o644)
		must(err)
		p.Close(fd)
		model["/mnt/d"][name] = true
		if i%50 == 49 {
			check(fmt.Sprintf("%d creates", i+1), "/mnt/d")
		} else if !listDir(t, p, "/mnt/d")[name] {
			t.Fatalf("create %s: the next listing does not show it", name)
		}
	}
	close(stop)
	wg.Wait()
	check("the creates", "/mnt/d", "/mnt/e")
	if st := stats(); st.Listings == 0 || st.Bytes <= 0 || st.Bytes > st.Limit || st.Dropped == 0 {
		t.Errorf("listing stats %+v: want listings held within the limit, and dropped by the changes", st)
	}
}
