package wasi

import (
	"bytes"
	"context"
	"fmt"
	"github.com/iovfs/iovfs/vfs"
	"github.com/tetratelabs/wazero/api"
	"testing"

	"github.com/iovfs/iovfs/internal/wasmgen"
	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/unix"
)

// instanceOn returns an instance on p and a module with one page of
// memory that the host functions can be called with directly.
func instanceOn(t testing.TB, cfg Config) (*instance, *guest) {
	t.Helper()
	p := newProc(t)
	w, err := newInstance(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { r.Close(ctx) })
	mod, err := r.Instantiate(ctx, wasmgen.Module(4, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	return w, &guest{t: t, ctx: ctx, mod: mod, mem: mod.Memory()}
}

// TestRWAllocs: fd_read and fd_write allocate nothing once warm, on
// /dev/zero, /dev/null and a tmpfs file, with one and with 16 iovecs.
func TestRWAllocs(t *testing.T) {
	w, g := instanceOn(t, Config{})
	p := w.p
	zero, _ := p.Open("/dev/zero", unix.O_RDONLY, 0)
	null, _ := p.Open("/dev/null", unix.O_WRONLY, 0)
	file, err := p.Open("/tmp/f", unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(file, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	const iovs, res = 1024, 2048
	segs := make([][2]uint32, 16)
	for i := range segs {
		segs[i] = [2]uint32{4096 + uint32(i)*4096, 4096}
	}
	g.iovecs(iovs, segs...)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		fn   func(context.Context, apiModule, []uint64)
		fd   int
		n    uint64
		seek bool
	}{
		{"fd_read/zero/1", w.fdRead, zero, 1, false},
		{"fd_read/zero/16", w.fdRead, zero, 16, false},
		{"fd_read/tmpfs/16", w.fdRead, file, 16, true},
		{"fd_write/null/1", w.fdWrite, null, 1, false},
		{"fd_write/tmpfs/16", w.fdWrite, file, 16, true},
	} {
		var stack [4]uint64
		call := func() {
			if c.seek {
				p.Seek(c.fd, 0, unix.SEEK_SET)
			}
			stack = [4]uint64{uint64(c.fd), iovs, c.n, res}
			c.fn(ctx, g.mod, stack[:])
		}
		call()
		if stack[0] != 0 || g.u32(res) != uint32(c.n)*4096 {
			t.Fatalf("%s: errno %d, count %d, want 0, %d", c.name, stack[0], g.u32(res), c.n*4096)
		}
		if a := testing.AllocsPerRun(200, call); a != 0 {
			t.Errorf("%s: %v allocations per call, want 0", c.name, a)
		}
	}
}

// TestReadOneCall: a 16-iovec fd_read of a tmpfs file fills the segments
// in order from the file position and moves it once.
func TestReadOneCall(t *testing.T) {
	g := newGuest(t, procWithFile(t), Config{Preopens: []Preopen{{Path: "/w", Guest: "/"}}}, nil)
	e, fd := g.open(3, "f", 0, rightFdRead|rightFdSeek, 0)
	if e != 0 {
		t.Fatalf("path_open: errno %d", e)
	}
	segs := make([][2]uint32, 16)
	for i := range segs {
		segs[i] = [2]uint32{8192 + uint32(i)*100, uint32(i + 1)}
	}
	g.iovecs(1024, segs...)
	if e := g.call("fd_read", uint64(fd), 1024, 16, 2048); e != 0 {
		t.Fatalf("fd_read: errno %d", e)
	}
	total := uint32(16 * 17 / 2)
	if n := g.u32(2048); n != total {
		t.Fatalf("fd_read: %d bytes, want %d", n, total)
	}
	var got []byte
	for _, s := range segs {
		got = append(got, g.bytes(s[0], s[1])...)
	}
	if want := pattern(int(total)); !bytes.Equal(got, want) {
		t.Fatalf("fd_read: got %q, want %q", got, want)
	}
	if e := g.call("fd_seek", uint64(fd), 0, unix.SEEK_CUR, 2048); e != 0 || g.u32(2048) != total {
		t.Fatalf("fd_tell after read: errno %d, pos %d, want %d", e, g.u32(2048), total)
	}
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}

// procWithFile is newProc with /w/f holding pattern(4096).
func procWithFile(t *testing.T) *procT {
	p := newProc(t)
	fd, err := p.Open("/w/f", unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.Write(fd, pattern(4096))
	p.Close(fd)
	return p
}

type apiModule = api.Module
type procT = vfs.Proc

// TestRWEdges: readv(2)'s rules at the WASI boundary. Zero iovecs read
// nothing (even with the array pointer out of memory); more than 1024
// give EINVAL; an iovec array outside memory gives EFAULT; a result
// pointer outside memory gives EFAULT before anything is read; a negative
// pread offset gives EINVAL; reading a write-only descriptor gives EBADF.
func TestRWEdges(t *testing.T) {
	p := newProc(t)
	r, w, err := p.Pipe2(0)
	if err != nil {
		t.Fatal(err)
	}
	p.Write(w, []byte("data"))
	g := newGuest(t, p, Config{}, nil)
	size := uint64(g.mem.Size())
	g.iovecs(1024, [2]uint32{4096, 4})
	for _, c := range []struct {
		name string
		fn   string
		args []uint64
		want uint32
	}{
		{"zero iovecs", "fd_read", []uint64{uint64(r), size + 100, 0, 2048}, 0},
		{"1025 iovecs", "fd_read", []uint64{uint64(r), 1024, 1025, 2048}, errnoInval},
		{"array outside memory", "fd_read", []uint64{uint64(r), size - 4, 1, 2048}, errnoFault},
		{"result outside memory", "fd_read", []uint64{uint64(r), 1024, 1, size - 2}, errnoFault},
		{"negative pread offset", "fd_pread", []uint64{uint64(r), 1024, 1, 1 << 63, 2048}, errnoInval},
		{"read of the write end", "fd_read", []uint64{uint64(w), 1024, 1, 2048}, errnoBadf},
		{"write of the read end", "fd_write", []uint64{uint64(r), 1024, 1, 2048}, errnoBadf},
		{"pread of a pipe", "fd_pread", []uint64{uint64(r), 1024, 1, 0, 2048}, errnoSpipe},
	} {
		if e := g.call(c.fn, c.args...); e != c.want {
			t.Errorf("%s: errno %d, want %d", c.name, e, c.want)
		}
	}
	b := make([]byte, 8)
	if n, _ := p.Read(r, b); string(b[:n]) != "data" {
		t.Fatalf("the pipe holds %q after the failed calls, want data", b[:n])
	}
}

// TestConcurrentGuests: two guest modules of one runtime share the wasi
// module; their fd_reads run at the same time (one on the shared scratch
// vector, one on its own) and each sees its own bytes.
func TestConcurrentGuests(t *testing.T) {
	p := newProc(t)
	g1 := newGuest(t, p, Config{}, nil)
	mod2, err := g1.r.InstantiateWithConfig(g1.ctx, wasmgen.Module(4, wasmgen.Imports(allWASI...), nil), wazero.NewModuleConfig().WithName("second"))
	if err != nil {
		t.Fatal(err)
	}
	g2 := &guest{t: t, ctx: g1.ctx, mod: mod2, mem: mod2.Memory(), r: g1.r}
	n := 2000
	if testing.Short() {
		n = 200
	}
	done := make(chan error, 2)
	for i, g := range []*guest{g1, g2} {
		fd, err := p.Open("/tmp/c", unix.O_RDWR|unix.O_CREAT, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			p.Write(fd, bytes.Repeat([]byte("ab"), 4096))
		}
		g.iovecs(1024, [2]uint32{8192, 3}, [2]uint32{9000, 5}, [2]uint32{10000, 8})
		go func() {
			fn := g.mod.ExportedFunction("fd_pread")
			for k := 0; k < n; k++ {
				off := uint64(k % 2)
				res, err := fn.Call(g.ctx, uint64(fd), 1024, 3, off, 2048)
				if err != nil || res[0] != 0 {
					done <- fmt.Errorf("fd_pread: %v, errno %v", err, res)
					return
				}
				c, _ := g.mem.ReadUint32Le(2048)
				a, _ := g.mem.Read(8192, 3)
				want := "aba"
				if off == 1 {
					want = "bab"
				}
				if c != 16 || string(a) != want {
					done <- fmt.Errorf("fd_pread at %d: %d bytes, %q; want 16, %q", off, c, a, want)
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
