package wasi

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/wasmgen"
	"github.com/iovfs/iovfs/vfs"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// guest is a wasmgen module instantiated against a wasi module: tests call
// WASI functions through its wrappers with arguments in its memory.
type guest struct {
	t   testing.TB
	ctx context.Context
	mod api.Module
	mem api.Memory
	r   wazero.Runtime
}

// allWASI are the functions every test guest imports.
var allWASI = []string{"fd_read", "fd_write", "fd_pread", "fd_pwrite", "fd_seek", "fd_close", "path_open",
	"path_create_directory", "path_filestat_get", "path_unlink_file", "path_symlink", "fd_readdir",
	"fd_prestat_get", "fd_prestat_dir_name", "fd_fdstat_get", "poll_oneoff",
	"fd_renumber", "fd_fdstat_set_flags", "fd_allocate", "fd_filestat_get",
	"fd_tell", "fd_fdstat_set_rights", "sock_shutdown"}

// newGuest instantiates a guest of 4 pages in a runtime whose wasi module
// is this package's on p (or wazero's own when p is nil, with cfg's FS).
func newGuest(t testing.TB, p *vfs.Proc, cfg Config, wcfg wazero.ModuleConfig, loops ...wasmgen.Loop) *guest {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	t.Cleanup(func() { r.Close(ctx) })
	if p != nil {
		if _, err := Instantiate(ctx, r, p, cfg); err != nil {
			t.Fatal(err)
		}
	} else {
		wasi_snapshot_preview1.MustInstantiate(ctx, r)
	}
	if wcfg == nil {
		wcfg = wazero.NewModuleConfig()
	}
	mod, err := r.InstantiateWithConfig(ctx, wasmgen.Module(4, wasmgen.Imports(allWASI...), loops), wcfg.WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	return &guest{t: t, ctx: ctx, mod: mod, mem: mod.Memory(), r: r}
}

// call calls a WASI function through the guest and returns its errno.
func (g *guest) call(name string, args ...uint64) uint32 {
	g.t.Helper()
	res, err := g.mod.ExportedFunction(name).Call(g.ctx, args...)
	if err != nil {
		g.t.Fatalf("%s: %v", name, err)
	}
	return uint32(res[0])
}

// iovecs writes an iovec array at at: {ptr, len} pairs.
func (g *guest) iovecs(at uint32, segs ...[2]uint32) {
	b := make([]byte, 8*len(segs))
	for i, s := range segs {
		binary.LittleEndian.PutUint32(b[i*8:], s[0])
		binary.LittleEndian.PutUint32(b[i*8+4:], s[1])
	}
	if !g.mem.Write(at, b) {
		g.t.Fatal("iovecs outside memory")
	}
}

func (g *guest) u32(at uint32) uint32 {
	v, ok := g.mem.ReadUint32Le(at)
	if !ok {
		g.t.Fatal("read outside memory")
	}
	return v
}

func (g *guest) bytes(at, n uint32) []byte {
	b, ok := g.mem.Read(at, n)
	if !ok {
		g.t.Fatal("read outside memory")
	}
	return append([]byte(nil), b...)
}

// open calls path_open(dirfd, follow, path, ...) with the rights Go's
// syscall package asks for the access mode, and returns the errno and fd.
func (g *guest) open(dirfd uint32, path string, oflags uint32, base uint64, fdflags uint32) (uint32, uint32) {
	g.t.Helper()
	const pathAt, fdAt = 60000, 60500
	if !g.mem.WriteString(pathAt, path) {
		g.t.Fatal("path outside memory")
	}
	e := g.call("path_open", uint64(dirfd), 1, pathAt, uint64(len(path)), uint64(oflags), base, allRights, uint64(fdflags), fdAt)
	return e, g.u32(fdAt)
}

// newProc returns an iovfs process with its standard descriptors on
// /dev/null and a tmpfs directory /w to preopen.
func newProc(t testing.TB) *vfs.Proc {
	t.Helper()
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := p.Open("/dev/null", 2, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Mkdir("/w", 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// str writes s at at and returns its address and length as call arguments.
func (g *guest) str(at uint32, s string) (uint64, uint64) {
	if !g.mem.WriteString(at, s) {
		g.t.Fatal("string outside memory")
	}
	return uint64(at), uint64(len(s))
}
