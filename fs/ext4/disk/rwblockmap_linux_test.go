package disk

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
)

// blockMapSets are the block-mapped volumes of the level tests: 1 KiB
// blocks reach the triple indirect level at 64 MiB, so sparse files reach
// every level in a small image.
var blockMapSets = []struct{ name, opts string }{
	{"ext2-1k", "-t ext2 -b 1024"},
	{"ext3-1k", "-t ext3 -b 1024"},
	{"ext4-noextent-1k", "-b 1024 ^extent,^64bit"},
	{"ext4-noextent-4k", "^extent,^64bit"},
	{"ext3-4k", "-t ext3"}, // no huge_file: a lower size limit
}

// blockMapLevels lists the logical blocks where the levels of a block map
// start: direct, single, double and triple indirect.
func blockMapLevels(bs int64) (starts [4]int64) {
	ppb := bs / 4
	return [4]int64{0, 12, 12 + ppb, 12 + ppb + ppb*ppb}
}

// statBlocks is st_blocks and st_size of p.
func statBlocks(t *testing.T, p string) string {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("size=%d blocks=%d", st.Size, st.Blocks)
}

// TestWriterBlockMapLevels writes and truncates files at every level of a
// block map (direct, single, double and triple indirect, across each
// boundary, up to the size limit) on a kernel loop mount and through the
// Writer, on identical images: every count and errno must match (EFBIG
// past ext4_max_bitmap_size, the short write just below it), and after
// each step e2fsck -fn is clean on the Writer's image and a kernel mount
// of it reads the same bytes, holes and st_blocks (indirect blocks
// included) as the kernel's own file. A directory grows past its direct
// blocks (1500 entries) and loses half of them.
func TestWriterBlockMapLevels(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	umask := uint32(syscall.Umask(0))
	syscall.Umask(int(umask))
	for _, fs := range blockMapSets {
		t.Run(fs.name, func(t *testing.T) {
			testenv.Sampled(t, "ext2-1k", "ext4-noextent-4k")
			dir := t.TempDir()
			base := filepath.Join(dir, "base.img")
			mkfsRW(t, base, 24, fs.opts)
			orig, err := os.ReadFile(base)
			if err != nil {
				t.Fatal(err)
			}
			bs := int64(1024)
			if strings.HasSuffix(fs.name, "-4k") {
				bs = 4096
			}
			starts := blockMapLevels(bs)
			kimg, mnt, um, dev, w := kernelTwin(t, dir, orig, "rw")
			k, x := kernelTarget{mnt}, writerTarget{w, umask}
			limit := w.v.maxBitmapBytes() // checked against the kernel's below
			data := func(n int, seed byte) []byte {
				b := make([]byte, n)
				for i := range b {
					b[i] = seed + byte(i%251)
				}
				return b
			}
			type op struct {
				desc string
				do   func(rwTarget) (int, error)
			}
			wr := func(p string, off int64, n int) op {
				return op{fmt.Sprintf("write %s %d+%d", p, off, n), func(r rwTarget) (int, error) { return r.write(p, off, data(n, byte(off))) }}
			}
			tr := func(p string, size int64) op {
				return op{fmt.Sprintf("truncate %s %d", p, size), func(r rwTarget) (int, error) { return 0, r.truncate(p, size) }}
			}
			cr := func(p string) op {
				return op{"create " + p, func(r rwTarget) (int, error) { return 0, r.create(p, 0644) }}
			}
			var ops []op
			// One file per level, written across the boundary into it.
			for lv, s := range starts {
				p := "L" + strconv.Itoa(lv)
				ops = append(ops, cr(p), wr(p, max(0, s*bs-100), int(3*bs)))
			}
			// A file filled through the single indirect level and into the
			// double, then cut back level by level: indirect blocks freed
			// as they empty.
			ops = append(ops, cr("fill"), wr("fill", 0, int((starts[2]+5)*bs)),
				tr("fill", (starts[2]+1)*bs+7), tr("fill", starts[2]*bs), tr("fill", starts[1]*bs+1),
				tr("fill", 5*bs), tr("fill", 0), wr("fill", starts[3]*bs+3, 10), tr("fill", starts[2]*bs+bs/2))
			// The size limit: the short write just below it, EFBIG at it,
			// truncate to it and past it.
			ops = append(ops, cr("max"), wr("max", limit-10, 100), wr("max", limit, 1), wr("max", limit+bs, 1),
				tr("max", limit), tr("max", limit+1), tr("max", starts[3]*bs+1), wr("max", limit-1, 1), tr("max", 1))
			// A directory past its direct blocks (1500 entries: 30 blocks
			// at 1 KiB), then half of its names removed.
			nent := 1500
			if testenv.Quick() || rwRace {
				nent = 800 // still 16 blocks at 1 KiB
			}
			ops = append(ops, op{"mkdir D", func(r rwTarget) (int, error) { return 0, r.mkdir("D", 0o755) }})
			for i := 0; i < nent; i++ {
				ops = append(ops, cr(fmt.Sprintf("D/entry-%04d", i)))
			}
			for i := 0; i < nent; i += 2 {
				p := fmt.Sprintf("D/entry-%04d", i)
				ops = append(ops, op{"unlink " + p, func(r rwTarget) (int, error) { return 0, r.unlink(p) }})
			}
			// Random writes and truncates over all levels of one file.
			r := rand.New(rand.NewSource(int64(len(fs.name))))
			ops = append(ops, cr("rnd"))
			for i := 0; i < 40; i++ {
				lv := r.Intn(4)
				off := starts[lv]*bs + int64(r.Intn(int(64*bs)))
				if r.Intn(5) == 0 {
					ops = append(ops, tr("rnd", off))
				} else {
					ops = append(ops, wr("rnd", off, 1+r.Intn(int(6*bs))))
				}
			}
			if bs > 1024 || testenv.Quick() || rwRace {
				// The tree comparison reads and hashes whole files: cut
				// the ones reaching the triple indirect level (4 GiB at
				// 4 KiB, 64 MiB at 1 KiB) back into the double one,
				// freeing those blocks.
				ops = append(ops, tr("L3", starts[2]*bs+bs+5), tr("rnd", starts[2]*bs+7*bs))
			}
			for i, o := range ops {
				nk, ek := o.do(k)
				nx, ex := o.do(x)
				if ek != nil {
					nk = 0 // pwrite's -1
				}
				if errnoOf(ek) != errnoOf(ex) || nk != nx {
					t.Fatalf("op %d %s: kernel (%d, %v), iovfs (%d, %v)", i, o.desc, nk, ek, nx, ex)
				}
			}
			syncMount(t, mnt)
			want := treeOf(t, mnt)
			wantBlocks := map[string]string{}
			for p, line := range want {
				// Regular files: the kernel's directories past a block
				// are htrees (other blocks, other sizes).
				if strings.HasPrefix(line, "mode=100") {
					wantBlocks[p] = statBlocks(t, filepath.Join(mnt, p))
				}
			}
			um()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			wimg := checkedImage(t, dir, dev)
			e2fsckClean(t, kimg)
			wm, wum := kmount(t, wimg, "ro,noload")
			got := treeOf(t, wm)
			diffTrees(t, want, got)
			for p, b := range wantBlocks {
				if g := statBlocks(t, filepath.Join(wm, p)); g != b {
					t.Errorf("%s: kernel %s, iovfs %s", p, b, g)
				}
			}
			wum()
			t.Logf("%d operations over every block map level and a 1500-entry directory (limit %d bytes): same results as the kernel, e2fsck clean, same bytes, holes and st_blocks", len(ops), limit)
		})
	}
}

// TestBlockMapWriteFullVolume: a write into the holes of a block-mapped
// file on a full volume fails with ENOSPC, as the kernel's, and with a
// few blocks free the holes inside i_size that the failed write_begin
// mapped stay, zeroed (keepZeroed), and the write fails or stops short:
// it once failed with EOPNOTSUPP there, from an extent-tree walk on the
// block map.
func TestBlockMapWriteFullVolume(t *testing.T) {
	needMke2fs(t)
	for _, typ := range []string{"ext2", "ext3"} {
		t.Run(typ, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "f.img")
			mkfsRW(t, img, 2, "-t "+typ+" -b 1024")
			dev, w := openMemWriter(t, img)
			fill, err := w.Create(rootIno, "fill", 0o644, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			// 64 KiB writes until one is short, then 1 KiB ones until
			// nothing is left.
			chunk := bytes.Repeat([]byte{0xAB}, 64<<10)
			off, step := int64(0), len(chunk)
			for {
				n, err := w.WriteAt(fill, chunk[:step], off)
				off += int64(n)
				if err == syscall.ENOSPC && n == 0 && step == 1024 {
					break
				}
				if err != nil && err != syscall.ENOSPC {
					t.Fatalf("filling at %d: %v", off, err)
				}
				if n < step {
					step = 1024
				}
			}
			if st := w.Statfs(); st.Bfree > 2*uint64(w.resvClusters()) {
				t.Fatalf("filled with %d blocks free", st.Bfree)
			}
			// A sparse file whose holes, inside its size, reach the
			// double-indirect range.
			g, err := w.Create(rootIno, "g", 0o644, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Truncate(g, 4<<20); err != nil {
				t.Fatal(err)
			}
			for _, off := range []int64{0, 12 << 10, 300 << 10, 2 << 20} {
				if n, err := w.WriteAt(g, chunk, off); err != syscall.ENOSPC || n != 0 {
					t.Errorf("write at %d on the full volume: %d, %v; want 0, ENOSPC", off, n, err)
				}
			}
			// A few blocks free again: a large write into holes maps
			// what it can for its first folio, then fails or stops short.
			if err := w.Truncate(fill, off-3<<10); err != nil {
				t.Fatal(err)
			}
			for _, off := range []int64{300 << 10, 2 << 20} {
				n, err := w.WriteAt(g, chunk, off)
				if err != nil && err != syscall.ENOSPC || err == nil && (n == 0 || n >= len(chunk)) {
					t.Errorf("write at %d with 3 blocks free: %d, %v; want ENOSPC or a short count", off, n, err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			e2fsckClean(t, checkedImage(t, t.TempDir(), dev))
		})
	}
}
