package ext4_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
)

// TestDirListingCache: getdents of directories served from their parsed
// listings (the default mount) matches getdents from the blocks
// (bcache=0, which turns listings off) at every seek offset, including
// directories with deleted entries (inode 0, and rec_len merged into the
// entry before), an empty directory and a multi-block one; the second
// listing of a directory reads no block at all; and ListingStats counts
// the listings' bytes, within the limit, and the hits.
func TestDirListingCache(t *testing.T) {
	fill := func(t testing.TB, dir string) {
		for _, d := range []string{"small", "holes", "empty", "big"} {
			os.Mkdir(filepath.Join(dir, d), 0o755)
		}
		for i := range 6 {
			os.WriteFile(filepath.Join(dir, "small", fmt.Sprintf("f%d", i)), nil, 0o644)
			os.WriteFile(filepath.Join(dir, "holes", fmt.Sprintf("name-%d", i)), nil, 0o644)
		}
		os.Symlink("small", filepath.Join(dir, "small", "link"))
		os.Mkdir(filepath.Join(dir, "small", "sub"), 0o755)
		for i := range 200 {
			os.WriteFile(filepath.Join(dir, "big", fmt.Sprintf("entry-%03d", i)), nil, 0o644)
		}
	}
	img := mkImage(t, 2048, fill, "-t", "ext4", "-b", "1024", "-O", "^dir_index")
	// Delete entries in place: the first one (its inode becomes 0 or its
	// space joins ".."), and two in the middle (merged into the one before).
	for _, n := range []string{"name-0", "name-2", "name-3"} {
		if out, err := exec.Command("debugfs", "-w", "-R", "unlink /holes/"+n, img).CombinedOutput(); err != nil {
			t.Fatalf("debugfs unlink %s: %v\n%s", n, err, out)
		}
	}
	pc, devc, donec := newProc(t, img, viaLoop)
	fsc := mountFS(t, pc, devc, "")
	donec()
	defer pc.Unmount("/mnt", 0)
	pu, devu, doneu := newProc(t, img, viaLoop)
	fsu := mountFS(t, pu, devu, "bcache=0")
	doneu()
	defer pu.Unmount("/mnt", 0)

	at := func(p *vfs.Proc, fd int, off int64) []vfs.Dirent {
		t.Helper()
		if _, err := p.Seek(fd, off, unix.SEEK_SET); err != nil {
			t.Fatal(err)
		}
		ds, err := p.Getdents(fd)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	for _, dir := range []string{"/mnt/small", "/mnt/holes", "/mnt/empty", "/mnt/big"} {
		fc, err := pc.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fu, err := pu.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := at(pu, fu, 0)
		if got := at(pc, fc, 0); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: getdents\n got %v\nwant %v", dir, got, want)
		}
		if dir == "/mnt/holes" && len(want) != 2+3 {
			t.Errorf("%s: %d entries, want 5 (the deletions did not happen)", dir, len(want))
		}
		before, _ := fsc.Volume().CacheStats()
		size := int64(1024)
		if s, err := pu.Stat(dir); err == nil {
			size = s.Size
		}
		for off := int64(0); off <= size+3; off++ {
			if got, want := at(pc, fc, off), at(pu, fu, off); !reflect.DeepEqual(got, want) {
				t.Errorf("%s at %d: getdents\n got %v\nwant %v", dir, off, got, want)
			}
		}
		after, _ := fsc.Volume().CacheStats()
		if gets := after.Hits + after.Misses - before.Hits - before.Misses; gets != 0 {
			t.Errorf("%s: %d buffer-cache reads after the first listing, want 0 (listing not cached)", dir, gets)
		}
		pc.Close(fc)
		pu.Close(fu)
	}
	ls := fsc.ListingStats()
	// The four directories; the root too if mountFS listed it.
	if ls.Listings < 4 || ls.Bytes <= 0 || ls.Bytes > ls.Limit || ls.Peak != ls.Bytes || ls.Hits == 0 {
		t.Errorf("listing stats %+v: want 4 or more listings, bytes within the limit, the peak the bytes held, hits", ls)
	}
	if lu := fsu.ListingStats(); lu.Listings != 0 || lu.Bytes != 0 || lu.Hits != 0 {
		t.Errorf("bcache=0: listing stats %+v, want none", lu)
	}
}

// TestDirListingEviction: listings are charged to the buffer cache, so a
// small bcache= budget bounds blocks and listings together: listing 300
// directories over and over in 24 KiB evicts listings (and blocks), the
// cache never holds more than its budget, what it holds as charges is
// exactly the listings' bytes, and every getdents still matches one from
// the blocks (bcache=0), whether its listing was evicted or not.
func TestDirListingEviction(t *testing.T) {
	dirs := 300
	if testenv.Quick() {
		dirs = 100 // still four times the budget
	}
	fill := func(t testing.TB, dir string) {
		for d := range dirs {
			sub := filepath.Join(dir, fmt.Sprintf("d%03d", d))
			os.Mkdir(sub, 0o755)
			for f := range 12 {
				os.WriteFile(filepath.Join(sub, fmt.Sprintf("file-%02d", f)), nil, 0o644)
			}
		}
	}
	img := mkImage(t, 8192, fill, "-t", "ext4", "-b", "1024", "-N", "4096")
	pc, devc, donec := newProc(t, img, viaLoop)
	fsc := mountFS(t, pc, devc, "bcache=24K")
	donec()
	defer pc.Unmount("/mnt", 0)
	pu, devu, doneu := newProc(t, img, viaLoop)
	mountFS(t, pu, devu, "bcache=0")
	doneu()
	defer pu.Unmount("/mnt", 0)

	for round := range 3 {
		for d := range dirs {
			dir := fmt.Sprintf("/mnt/d%03d", d)
			if got, want := listAll(t, pc, dir), listAll(t, pu, dir); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d %s: getdents\n got %v\nwant %v", round, dir, got, want)
			}
			st, _ := fsc.Volume().CacheStats()
			if ls := fsc.ListingStats(); st.Bytes > st.Limit || st.ChargedBytes != ls.Bytes || int64(st.Charges) != ls.Listings {
				t.Fatalf("round %d %s: cache %d bytes (limit %d), %d charges of %d bytes; listings %d of %d bytes",
					round, dir, st.Bytes, st.Limit, st.Charges, st.ChargedBytes, ls.Listings, ls.Bytes)
			}
		}
	}
	st, _ := fsc.Volume().CacheStats()
	ls := fsc.ListingStats()
	if st.Peak > st.Limit || ls.Limit != st.Limit || ls.Dropped == 0 || ls.Hits == 0 || st.Evictions == 0 {
		t.Errorf("cache %+v\nlistings %+v: want the peak within the limit, listings evicted and hit", st, ls)
	}
	t.Logf("cache peak %d of %d bytes; %d listings dropped, %d getdents from listings, %d from blocks", st.Peak, st.Limit, ls.Dropped, ls.Hits, ls.Misses)
}
