package wasi_test

import (
	"context"
	"fmt"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/wasmgen"
	"github.com/iovfs/iovfs/wasi"
	"github.com/tetratelabs/wazero"
	"golang.org/x/sys/unix"
)

// A guest writes to its standard output, which is a tmpfs file of the
// process: the guest's descriptors are the process's.
func ExampleInstantiate() {
	ctx := context.Background()
	p, _ := iovfs.New()
	p.Open("/dev/null", unix.O_RDONLY, 0)                 // fd 0
	p.Open("/tmp/out", unix.O_WRONLY|unix.O_CREAT, 0o644) // fd 1
	p.Open("/dev/null", unix.O_WRONLY, 0)                 // fd 2
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if _, err := wasi.Instantiate(ctx, r, p, wasi.Config{Preopens: []wasi.Preopen{{Path: "/tmp"}}}); err != nil {
		panic(err)
	}

	// Any wasip1 module would do; this one, assembled in Go, exports
	// wrappers of the functions it imports.
	guest, _ := r.Instantiate(ctx, wasmgen.Module(1, wasmgen.Imports("fd_write"), nil))
	mem := guest.Memory()
	mem.WriteString(100, "hello, ")
	mem.WriteString(200, "wasi\n")
	for i, iov := range [][2]uint32{{100, 7}, {200, 5}} { // two iovecs
		mem.WriteUint32Le(uint32(i*8), iov[0])
		mem.WriteUint32Le(uint32(i*8+4), iov[1])
	}
	res, _ := guest.ExportedFunction("fd_write").Call(ctx, 1, 0, 2, 300)
	n, _ := mem.ReadUint32Le(300)
	fmt.Println("errno", res[0], "written", n)

	b := make([]byte, 64)
	fd, _ := p.Open("/tmp/out", unix.O_RDONLY, 0)
	m, _ := p.Read(fd, b)
	fmt.Printf("%q\n", b[:m])
	// Output:
	// errno 0 written 12
	// "hello, wasi\n"
}
