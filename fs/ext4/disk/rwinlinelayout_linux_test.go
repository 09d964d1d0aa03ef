package disk

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// debugfsOut runs one read-only debugfs request on img.
func debugfsOut(t *testing.T, img, req string) string {
	t.Helper()
	out, err := exec.Command("debugfs", "-R", req, img).Output()
	if err != nil {
		t.Fatalf("debugfs %s: %v", req, err)
	}
	return string(out)
}

// inodeDump is debugfs idump's bytes of path's inode (octal offsets, hex
// words).
func inodeDump(t *testing.T, img, path string) []byte {
	t.Helper()
	var out, prev []byte
	for _, line := range strings.Split(debugfsOut(t, img, "idump "+path), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		off, err := strconv.ParseUint(f[0], 8, 32)
		if err != nil {
			continue
		}
		for len(out) < int(off) && len(prev) == 16 { // "*": lines like the last
			out = append(out, prev...)
		}
		if int(off) != len(out) {
			continue
		}
		start := len(out)
		for _, w := range f[1:min(len(f), 9)] {
			if len(w) != 4 {
				break
			}
			b, err := strconv.ParseUint(w, 16, 16)
			if err != nil {
				break
			}
			out = append(out, byte(b>>8), byte(b))
		}
		prev = out[start:]
	}
	if len(out) < 128 {
		t.Fatalf("idump %s: %d bytes", path, len(out))
	}
	return out
}

// inlineLayout is what debugfs stat says about where path's data lives:
// flags, size, block count, the inline data size and the system.data
// value length ("" when there is none).
func inlineLayout(t *testing.T, img, path string) string {
	t.Helper()
	st := debugfsOut(t, img, "stat "+path)
	field := func(re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(st)
		if m == nil {
			return "-"
		}
		return m[1]
	}
	return fmt.Sprintf("flags=%s size=%s blockcount=%s inline=%s system.data=%s",
		field(`Flags: (0x[0-9a-f]+)`), field(`Size: (\d+)\n`), field(`Blockcount: (\d+)`),
		field(`Size of inline data: (\d+)`), field(`system.data \((\d+)\)`))
}

// TestWriterInlineLayout checks where the Writer keeps data on an
// inline_data volume, with debugfs (stat, idump) as the oracle:
//
//   - files written in one write(2) from empty: the same layout as
//     mke2fs -d gives the same bytes (libext2fs follows the kernel's
//     limit, 128 bytes with 256-byte inodes): inline up to 128 bytes with
//     system.data's value exactly the part past 60 bytes, i_block and the
//     in-inode xattr space byte for byte (but an empty value's offset,
//     which libext2fs sets and the kernel leaves 0); 129 bytes and more
//     in a block;
//   - directories: new ones inline with ".." in i_block and an empty
//     system.data, as mke2fs makes empty ones; an entry in i_block byte
//     for byte as mke2fs writes it. Where mke2fs and the kernel part
//     (mke2fs gives a directory a block once i_block is full, and makes
//     empty files inline), the kernel's rules are checked instead: the
//     value grown to the inode's maximum for more entries
//     (ext4_update_inline_dir), then the conversion's block
//     (ext4_finish_convert_inline_dir); an empty new file has an extent
//     header (__ext4_new_inode);
//   - truncate down and up stays inline (ext4_inline_data_truncate), a
//     write past the limit and every fallocate convert, an xattr in the
//     body lowers the limit (ext4_get_max_inline_size);
//   - e2fsck -fn is clean and a ro,noload kernel mount reads every file's
//     bytes and size back, with the st_blocks iovfs shows.
func TestWriterInlineLayout(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	content := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + i%26)
		}
		return b
	}
	sizes := []int{1, 30, 59, 60, 61, 100, 127, 128, 129, 200}
	if err := os.MkdirAll(filepath.Join(src, "d1"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(src, "d0"), 0o755)
	for _, n := range sizes {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("f%d", n)), content(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("f1", filepath.Join(src, "d1", "x")); err != nil {
		t.Fatal(err)
	}
	mk := func(img string, d bool) {
		args := []string{"-q", "-F", "-t", "ext4", "-b", "4096", "-I", "256", "-O", "inline_data", "-E", "lazy_itable_init=1"}
		if d {
			args = append(args, "-d", src)
		}
		if out, err := exec.Command("mke2fs", append(args, img, "16M")...).CombinedOutput(); err != nil {
			t.Fatalf("mke2fs: %v\n%s", err, out)
		}
	}
	mimg, wimg := filepath.Join(dir, "m.img"), filepath.Join(dir, "w.img")
	mk(mimg, true)
	mk(wimg, false)
	dev, w := openMemWriter(t, wimg)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	create := func(dir uint32, name string) uint32 {
		t.Helper()
		ino, err := w.Create(dir, name, 0o644, 0, 0)
		must(err)
		return ino
	}
	write := func(ino uint32, p []byte, off int64) {
		t.Helper()
		n, err := w.WriteAt(ino, p, off)
		must(err)
		if n != len(p) {
			t.Fatalf("write: %d of %d", n, len(p))
		}
	}
	want := map[string][]byte{} // path -> contents the kernel must read
	for _, n := range sizes {
		name := fmt.Sprintf("f%d", n)
		write(create(rootIno, name), content(n), 0)
		want[name] = content(n)
	}
	d0, err := w.Mkdir(rootIno, "d0", 0o755, 0, 0)
	must(err)
	d1, err := w.Mkdir(rootIno, "d1", 0o755, 0, 0)
	must(err)
	_, err = w.Symlink(d1, "x", "f1", 0, 0)
	must(err)
	_ = d0

	// Kernel rules past mke2fs's: an empty file, a directory growing into
	// system.data and then out of the inode, truncates, conversions.
	create(rootIno, "empty")
	want["empty"] = nil
	grow, err := w.Mkdir(rootIno, "grow", 0o755, 0, 0)
	must(err)
	conv, err := w.Mkdir(rootIno, "conv", 0o755, 0, 0)
	must(err)
	for i := 0; i < 7; i++ { // 16-byte entries: 3 in i_block, 4 in the value
		create(grow, fmt.Sprintf("name%02d", i))
		create(conv, fmt.Sprintf("name%02d", i))
		want[fmt.Sprintf("grow/name%02d", i)] = nil
		want[fmt.Sprintf("conv/name%02d", i)] = nil
	}
	must(w.Unlink(conv, "name01")) // merged into name00, wiped
	delete(want, "conv/name01")
	create(conv, "name07") // into name00's slack (name01's old place)
	// The inline bytes before the conversion (i_block and the value).
	craw, err := w.getInode(conv)
	must(err)
	if iFlags(craw)&FlagInlineData == 0 {
		t.Fatal("conv converted before its i_block and value were full")
	}
	before, err := w.inlineDir(conv, craw)
	must(err)
	create(conv, "name08") // no gap of 16 bytes left: the block
	want["conv/name07"], want["conv/name08"] = nil, nil

	tr := create(rootIno, "trunc")
	write(tr, content(100), 0)
	must(w.Truncate(tr, 30))
	must(w.Truncate(tr, 5000))
	want["trunc"] = append(content(30), make([]byte, 4970)...)
	past := create(rootIno, "past")
	write(past, content(100), 0)
	write(past, []byte("z"), 200)
	want["past"] = append(append(content(100), make([]byte, 100)...), 'z')
	fa := create(rootIno, "falloc")
	write(fa, content(30), 0)
	must(w.Fallocate(fa, unix.FALLOC_FL_KEEP_SIZE|unix.FALLOC_FL_PUNCH_HOLE, 40, 10))
	want["falloc"] = content(30)
	fe := create(rootIno, "falloc-empty")
	must(w.Fallocate(fe, unix.FALLOC_FL_KEEP_SIZE, 0, 4096))
	write(fe, content(10), 0)
	want["falloc-empty"] = content(10)
	xa := create(rootIno, "xattr")
	must(w.Setxattr(xa, "user.k", content(40), 0))
	write(xa, content(68), 0) // 68 bytes still fit: 28 free, 20 for the entry
	xb := create(rootIno, "xattr-full")
	must(w.Setxattr(xb, "user.k", content(40), 0))
	write(xb, content(69), 0)
	want["xattr"], want["xattr-full"] = content(68), content(69)
	view := writerView(t, w.Volume())
	must(w.Close())
	must(os.WriteFile(wimg, dev, 0o600))
	e2fsckClean(t, wimg)

	// mke2fs's layout for the same files and directories.
	for _, n := range sizes {
		p := fmt.Sprintf("/f%d", n)
		ml, wl := inlineLayout(t, mimg, p), inlineLayout(t, wimg, p)
		if ml != wl {
			t.Errorf("%s: mke2fs %s, iovfs %s", p, ml, wl)
		}
		if n <= 128 {
			mi, wi := inodeDump(t, mimg, p), inodeDump(t, wimg, p)
			xs := 128 + int(le16(mi, 0x80))
			if e := xs + 4; le32(mi, e+8) == 0 {
				// An empty value: libext2fs points e_value_offs at the
				// end of the space, the kernel's ext4_xattr_set_entry
				// leaves it 0 (the Writer does as the kernel).
				mi[e+2], mi[e+3] = 0, 0
			}
			if !bytes.Equal(mi[0x28:0x64], wi[0x28:0x64]) || !bytes.Equal(mi[xs:], wi[xs:]) {
				t.Errorf("%s: i_block and xattr space differ:\nmke2fs %x %x\niovfs  %x %x", p, mi[0x28:0x64], mi[xs:], wi[0x28:0x64], wi[xs:])
			}
		}
	}
	for _, p := range []string{"/d0", "/d1"} {
		if ml, wl := inlineLayout(t, mimg, p), inlineLayout(t, wimg, p); ml != wl {
			t.Errorf("%s: mke2fs %s, iovfs %s", p, ml, wl)
		}
	}
	// d1's entry "x": the same bytes but its inode number; ".." is root.
	mi, wi := inodeDump(t, mimg, "/d1"), inodeDump(t, wimg, "/d1")
	if !bytes.Equal(mi[0x28:0x2C], wi[0x28:0x2C]) || !bytes.Equal(mi[0x30:0x64], wi[0x30:0x64]) {
		t.Errorf("/d1 i_block: mke2fs %x, iovfs %x", mi[0x28:0x64], wi[0x28:0x64])
	}

	// The kernel's rules.
	for p, l := range map[string]string{
		"/empty": "flags=0x80000 size=0 blockcount=0 inline=- system.data=-",
		// ext4_update_inline_dir: the value is the inode's maximum, 68.
		"/grow":         "flags=0x10000000 size=128 blockcount=0 inline=128 system.data=68",
		"/conv":         "flags=0x80000 size=4096 blockcount=8 inline=- system.data=-",
		"/trunc":        "flags=0x10000000 size=5000 blockcount=0 inline=60 system.data=0",
		"/past":         "flags=0x80000 size=201 blockcount=8 inline=- system.data=-",
		"/falloc":       "flags=0x80000 size=30 blockcount=8 inline=- system.data=-",
		"/falloc-empty": "flags=0x80000 size=10 blockcount=8 inline=- system.data=-",
		"/xattr":        "flags=0x10000000 size=68 blockcount=0 inline=68 system.data=8",
		"/xattr-full":   "flags=0x80000 size=69 blockcount=8 inline=- system.data=-",
	} {
		if got := inlineLayout(t, wimg, p); got != l {
			t.Errorf("%s: %s, want %s", p, got, l)
		}
	}
	tb := inodeDump(t, wimg, "/trunc")
	if !bytes.Equal(tb[0x28:0x28+30], content(30)) || !bytes.Equal(tb[0x28+30:0x64], make([]byte, 30)) {
		t.Errorf("/trunc i_block %x: want 30 bytes of data, then zeros", tb[0x28:0x64])
	}
	// The converted directory's block: ".", ".." of 12 bytes, the inline
	// entries byte for byte from offset 24 (i_block's after its 4-byte
	// "..", then the value's: inline offset + 20), the last one stretched
	// to the checksum tail; then name08 after it (the first gap that
	// fits, ext4_add_entry's add_dirent_to_buf).
	v, err := Open(BytesDevice(dev), Options{})
	must(err)
	cin, err := v.Inode(conv)
	must(err)
	var c ExtentCache
	m, err := v.MapBlocks(cin, &c, 0)
	must(err)
	blk := make([]byte, v.bs)
	must(v.readBlock(m.Physical, blk))
	if le32(blk, 0) != conv || le16(blk, 4) != 12 || string(blk[8:9]) != "." || le32(blk, 12) != rootIno || le16(blk, 16) != 12 || string(blk[20:22]) != ".." {
		t.Errorf("conv: bad . and ..: %x", blk[:24])
	}
	type ent struct {
		off  int
		name string
	}
	var ents []ent
	for off := 24; off < int(v.bs)-12; {
		rl := int(le16(blk, off+4))
		if rl < 12 {
			t.Fatalf("conv: bad entry at %d: %x", off, blk[off:off+16])
		}
		if le32(blk, off) != 0 {
			ents = append(ents, ent{off, string(blk[off+8 : off+8+int(blk[off+6])])})
		}
		off += rl
	}
	var wantEnts []ent
	for off := inlineDotdot; off < len(before); {
		rl := int(le16(before, off+4))
		if le32(before, off) != 0 {
			wantEnts = append(wantEnts, ent{off + 20, string(before[off+8 : off+8+int(before[off+6])])})
		}
		off += rl
	}
	last := wantEnts[len(wantEnts)-1]
	wantEnts = append(wantEnts, ent{last.off + 16, "name08"})
	if len(wantEnts) != 8 {
		t.Fatalf("conv held %d entries before its conversion, want 7", len(wantEnts)-1)
	}
	if fmt.Sprint(ents) != fmt.Sprint(wantEnts) {
		t.Errorf("conv block entries %v, want %v", ents, wantEnts)
	}

	// The kernel reads what iovfs wrote, with iovfs's st_blocks.
	mnt, um := kmount(t, wimg, "ro,noload")
	defer um()
	for p, data := range want {
		got, err := os.ReadFile(filepath.Join(mnt, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: kernel reads %d bytes %x, want %d %x", p, len(got), got[:min(len(got), 80)], len(data), data[:min(len(data), 80)])
		}
	}
	sameSizes(t, mnt, view)
	t.Logf("%d paths checked against mke2fs's layout and the kernel's rules; e2fsck clean; the kernel reads them back", len(view))
}
