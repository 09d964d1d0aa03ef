package fuse

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// TestReadDirectReply serves READs of files on a tmpfs and on an ext4
// image mounted with and without dax, and checks each reply's bytes
// against the host file, and where they come from: on dax a READ of data
// is answered with views of the device memory, which do not lie in
// go-fuse's buffer and cost no allocation; a READ that reaches a hole of
// an ext4 file, one inside a hole, every READ without dax and every READ
// of a tmpfs file are answered in go-fuse's buffer, at least in part,
// without an allocation either; a READ past the end answers 0 bytes.
// (tmpfs pages are Go memory that a concurrent WRITE may change: a view
// of them handed to the kernel's writev would be a data race.)
func TestReadDirectReply(t *testing.T) {
	testenv.RequireTool(t, "mke2fs")
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	r := rand.New(rand.NewPCG(3, 4))
	big := make([]byte, 3<<20+77)
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(filepath.Join(src, "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	// sparse: 8 KiB of data, a hole to 1 MiB, 4 KiB of data.
	sparse := make([]byte, 1<<20+4096)
	copy(sparse, big[:8192])
	copy(sparse[1<<20:], big[8192:8192+4096])
	f, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(sparse[:8192], 0)
	f.WriteAt(sparse[1<<20:], 1<<20)
	f.Close()
	img := filepath.Join(t.TempDir(), "ext4.img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", src, img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	type read struct {
		file      string
		off, size int
		view      bool // on dax, answered from device memory
	}
	reads := []read{
		{"big", 0, 1 << 20, true},
		{"big", 4096 + 3, 131072, true},
		// The last 7 bytes, then the end of the file.
		{"big", 3<<20 + 70, 4096, true},
		{"big", 3<<20 + 70, 7, true},
		{"big", 3<<20 + 77, 4096, false}, // at the end
		{"sparse", 4096, 8192, false},    // data, then the hole
		{"sparse", 65536, 4096, false},   // inside the hole
		{"sparse", 1<<20 - 4096, 8192, false},
		{"sparse", 1 << 20, 4096, true},
	}
	content := map[string][]byte{"big": big, "sparse": sparse}
	for _, data := range []string{"", "dax", "tmpfs"} {
		t.Run("opts="+data, func(t *testing.T) {
			var p *vfs.Proc
			if data == "tmpfs" {
				p = tmpfsProc(t, content)
			} else {
				p = ext4Proc(t, img, data)
			}
			t.Cleanup(func() { p.Unmount("/mnt", 0) })
			views := data == "dax" // answered from the file's memory
			s := &Server{base: p, handles: map[uint64]*handle{}}
			rfs := &rawFS{s: s}
			fhs := map[string]uint64{}
			for name := range content {
				fd, err := p.Open("/mnt/"+name, unix.O_RDONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Close(fd) })
				fhs[name] = s.addHandle(&handle{fd: fd})
			}
			buf := make([]byte, 1<<20)
			for _, rd := range reads {
				in := &gofuse.ReadIn{Fh: fhs[rd.file], Offset: uint64(rd.off), Size: uint32(rd.size)}
				rr, st := rfs.Read(nil, in, buf)
				if !st.Ok() {
					t.Fatalf("READ %+v: %v", rd, st)
				}
				got, _ := rr.Bytes(nil)
				c := content[rd.file]
				want := c[min(rd.off, len(c)):min(rd.off+rd.size, len(c))]
				if !bytes.Equal(got, want) || rr.Size() != len(want) {
					t.Errorf("READ %+v: %d bytes (size %d) that differ from the file's %d", rd, len(got), rr.Size(), len(want))
				}
				pieces, _ := rr.(interface {
					Slices() ([][]byte, gofuse.Status)
				}).Slices()
				inBuf := false
				for _, b := range pieces {
					inBuf = inBuf || len(b) > 0 && inside(b, buf)
				}
				wantView := rd.view && views
				if len(got) > 0 && inBuf == wantView {
					t.Errorf("READ %+v: reply in go-fuse's buffer %v, want %v", rd, inBuf, !wantView)
				}
				rr.Done()
			}
			if data == "" || raceEnabled {
				return
			}
			in := &gofuse.ReadIn{Fh: fhs["big"], Offset: 1 << 20, Size: 1 << 20}
			if a := testing.AllocsPerRun(100, func() {
				rr, st := rfs.Read(nil, in, buf)
				if !st.Ok() || rr.Size() != 1<<20 {
					t.Fatal(st)
				}
				rr.Done()
			}); a != 0 {
				t.Errorf("READ from the file's memory: %v allocations, want 0", a)
			}
		})
	}
}

// tmpfsProc returns a Proc with a tmpfs at /mnt holding the files of
// content, each written in one piece but for its pages of zeros, which
// stay holes.
func tmpfsProc(t *testing.T, content map[string][]byte) *vfs.Proc {
	t.Helper()
	p := newProc(t)
	if err := p.Mount("tmpfs", "/mnt", "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	for name, c := range content {
		fd, err := p.Open("/mnt/"+name, unix.O_CREAT|unix.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < len(c); {
			end := off
			for end < len(c) && !bytes.Equal(c[end:min(end+4096, len(c))], make([]byte, min(4096, len(c)-end))) {
				end += 4096
			}
			end = min(end, len(c))
			if end > off {
				if _, err := p.Pwrite(fd, c[off:end], int64(off)); err != nil {
					t.Fatal(err)
				}
				off = end
			} else {
				off += 4096
			}
		}
		if err := p.Ftruncate(fd, int64(len(c))); err != nil {
			t.Fatal(err)
		}
		p.Close(fd)
	}
	return p
}

// inside reports whether b lies in buf's memory.
func inside(b, buf []byte) bool {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	s := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= s && p < s+uintptr(cap(buf))
}
