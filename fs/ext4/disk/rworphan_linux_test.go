package disk

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// orphanModel is what the orphan list and the orphan file must hold:
// list newest first, as ext4_orphan_add links them, and the file's slots
// (0: free), each add taking the first free slot (ext4_orphan_file_add
// with one CPU) and falling back to the list when none is.
type orphanModel struct {
	list  []uint32
	slots []uint32
}

func (m *orphanModel) add(ino uint32) {
	if i := slices.Index(m.slots, 0); i >= 0 {
		m.slots[i] = ino
		return
	}
	m.list = slices.Insert(m.list, 0, ino)
}

func (m *orphanModel) del(ino uint32) {
	if i := slices.Index(m.slots, ino); i >= 0 {
		m.slots[i] = 0
		return
	}
	i := slices.Index(m.list, ino)
	if i < 0 {
		panic(fmt.Sprintf("inode %d is no orphan", ino))
	}
	m.list = slices.Delete(m.list, i, i+1)
}

func (m *orphanModel) len() int {
	n := len(m.list)
	for _, s := range m.slots {
		if s != 0 {
			n++
		}
	}
	return n
}

// checkOrphans compares w's orphan list (as written, through the running
// transaction) and orphan file with m, and orphanPrev with the list.
func checkOrphans(t *testing.T, w *Writer, m *orphanModel, step int) {
	t.Helper()
	var got []uint32
	for ino := le32(w.sb, sbLastOrphan); ino != 0 && len(got) <= len(m.list); {
		got = append(got, ino)
		raw, err := w.getInode(ino)
		if err != nil {
			t.Fatalf("step %d: orphan %d: %v", step, ino, err)
		}
		ino = nextOrphan(raw)
	}
	if !slices.Equal(got, m.list) {
		t.Fatalf("step %d: orphan list on disk %v, want %v", step, got, m.list)
	}
	if len(w.orphanPrev) != len(m.list) {
		t.Fatalf("step %d: orphanPrev has %d inodes, the list %d", step, len(w.orphanPrev), len(m.list))
	}
	for i, ino := range m.list {
		want := uint32(0)
		if i > 0 {
			want = m.list[i-1]
		}
		if p, ok := w.orphanPrev[ino]; !ok || p != want {
			t.Fatalf("step %d: orphanPrev[%d] = %d, %v; want %d", step, ino, p, ok, want)
		}
	}
	if m.slots == nil {
		return
	}
	per := w.orphanPerBlock()
	for s, want := range m.slots {
		if got := le32(w.ofile.blks[s/per], 4*(s%per)); got != want {
			t.Fatalf("step %d: orphan file slot %d holds %d, want %d", step, s, got, want)
		}
	}
}

// TestWriterOrphanListOrder: random adds (an unlink of an open file, an
// rmdir of an open directory, an unnamed file) and removes (the last
// close, the link that names an unnamed file) in any order keep the
// on-disk list exactly as the kernel links it, newest first, with
// orphanPrev its backward links, and, with orphan_file, the first free
// slot taken before the list. Copies of the running image, as a crash
// would leave it, are cleaned up by OpenWriter as by the kernel
// (orphanDiff: e2fsck-clean, the same blocks and tree), and the closed
// volume is e2fsck-clean.
func TestWriterOrphanListOrder(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	for _, fs := range []struct {
		name string
		args []string
		file bool
	}{
		{"ext4", []string{"-b", "1024"}, false},
		// Two blocks of 254 slots: the list takes the rest.
		{"ext4-orphan_file", []string{"-b", "1024", "-O", "orphan_file,metadata_csum_seed", "-E", "lazy_itable_init=1,orphan_file_size=2"}, true},
	} {
		t.Run(fs.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "o.img")
			args := append([]string{"-q", "-F", "-t", "ext4", "-N", "2048"}, fs.args...)
			if out, err := exec.Command("mke2fs", append(args, img, "16M")...).CombinedOutput(); err != nil {
				t.Fatalf("mke2fs: %v\n%s", err, out)
			}
			dev, w := openMemWriter(t, img)
			m := &orphanModel{}
			if fs.file {
				if w.ofile == nil {
					t.Fatal("no orphan file")
				}
				m.slots = make([]uint32, len(w.ofile.blks)*w.orphanPerBlock())
			}
			r := rand.New(rand.NewSource(1))
			var held []uint32             // orphans, held open
			linkable := map[uint32]bool{} // unnamed files LinkAs may name
			names := 0
			const steps = 1400
			crashAt := map[int]bool{steps / 2: true, steps * 3 / 4: true}
			most := 0
			for step := 0; step < steps; step++ {
				addBias := 90
				if step >= steps/2 {
					addBias = 30
				}
				switch op := r.Intn(100); {
				case op < addBias && len(held) < 650:
					var ino uint32
					var err error
					switch r.Intn(4) {
					case 0:
						ino, err = w.TmpfileAs(nil, rootIno, S_IFREG|0o644, 0, 0, true)
						if err == nil {
							w.Hold(ino) // the open that made it
							linkable[ino] = true
						}
					case 1:
						name := fmt.Sprintf("d%d", names)
						names++
						if ino, err = w.Mkdir(rootIno, name, 0o755, 0, 0); err == nil {
							w.Hold(ino)
							err = w.Rmdir(rootIno, name)
						}
					default:
						name := fmt.Sprintf("f%d", names)
						names++
						if ino, err = w.Create(rootIno, name, 0o644, 0, 0); err == nil {
							if _, err = w.WriteAt(ino, bytes.Repeat([]byte{'o'}, 1+r.Intn(3000)), 0); err == nil {
								w.Hold(ino)
								err = w.Unlink(rootIno, name)
							}
						}
					}
					if err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					m.add(ino)
					held = append(held, ino)
				case len(held) > 0:
					i := r.Intn(len(held))
					ino := held[i]
					if linkable[ino] && r.Intn(3) == 0 {
						name := fmt.Sprintf("l%d", names)
						names++
						if err := w.LinkAs(nil, rootIno, name, ino); err != nil {
							t.Fatalf("step %d: link %d: %v", step, ino, err)
						}
					}
					if err := w.Unhold(ino); err != nil {
						t.Fatalf("step %d: unhold %d: %v", step, ino, err)
					}
					delete(linkable, ino)
					m.del(ino)
					held = slices.Delete(held, i, i+1)
				}
				checkOrphans(t, w, m, step)
				most = max(most, len(m.list))
				if crashAt[step] {
					n := m.len()
					if freed, cut := orphanDiff(t, bytes.Clone(dev)); freed != n || cut != 0 {
						t.Fatalf("step %d: the crash copy's cleanup freed %d, cut %d; want %d, 0", step, freed, cut, n)
					}
				}
			}
			if most < 20 {
				t.Fatalf("the list held at most %d orphans", most)
			}
			r.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
			for _, ino := range held {
				if err := w.Unhold(ino); err != nil {
					t.Fatal(err)
				}
				m.del(ino)
			}
			checkOrphans(t, w, m, steps)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			e2fsckClean(t, checkedImageOf(t, dev))
			t.Logf("%d steps, at most %d orphans on the list", steps, most)
		})
	}
}

// checkedImageOf writes dev to a new image file for e2fsck.
func checkedImageOf(t *testing.T, dev memWDev) string {
	t.Helper()
	return uniqueImage(t, t.TempDir(), "w", dev)
}

// BenchmarkOrphanRelease: the last closes of 5,000 open-unlinked files,
// oldest first, one transaction each: on the s_last_orphan list ("list",
// each at its tail) and in an orphan file that holds them all
// ("orphan_file", slots freed in the order they were taken).
func BenchmarkOrphanRelease(b *testing.B) {
	needMke2fs(b)
	const n = 5000
	for _, v := range []struct{ name, features string }{
		{"list", ""},
		{"orphan_file", "orphan_file,metadata_csum_seed -E lazy_itable_init=1,orphan_file_size=32"},
	} {
		b.Run(v.name, func(b *testing.B) {
			img := filepath.Join(b.TempDir(), "o.img")
			args := []string{"-q", "-F", "-t", "ext4", "-b", "4096"}
			if v.features != "" {
				args = append(args, "-O")
				args = append(args, strings.Fields(v.features)...)
			}
			if out, err := exec.Command("mke2fs", append(args, img, "64M")...).CombinedOutput(); err != nil {
				b.Fatalf("mke2fs: %v\n%s", err, out)
			}
			orig, err := os.ReadFile(img)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dev := memWDev(bytes.Clone(orig))
				w, err := OpenWriter(dev, Options{})
				if err != nil {
					b.Fatal(err)
				}
				inos := make([]uint32, n)
				for i := range inos {
					name := fmt.Sprintf("f%d", i)
					if inos[i], err = w.Create(rootIno, name, 0o644, 0, 0); err != nil {
						b.Fatal(err)
					}
					w.Hold(inos[i])
					if err := w.Unlink(rootIno, name); err != nil {
						b.Fatal(err)
					}
				}
				if v.name == "orphan_file" && (w.ofile == nil || len(w.ofile.slot) != n) {
					b.Fatal("the orphan file does not hold every orphan")
				}
				b.StartTimer()
				for _, ino := range inos {
					if err := w.Unhold(ino); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if le32(w.sb, sbLastOrphan) != 0 {
					b.Fatal("orphan list not empty")
				}
				w.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/release")
		})
	}
}
