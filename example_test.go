package iovfs_test

import (
	"fmt"
	"io"

	"github.com/iovfs/iovfs"
	"golang.org/x/sys/unix"
)

// Read /dev/zero through the descriptor API, one vectored call filling two
// buffers, and through the Go handle.
func Example() {
	p, err := iovfs.New()
	if err != nil {
		panic(err)
	}
	fd, err := p.Open("/dev/zero", unix.O_RDONLY, 0)
	if err != nil {
		panic(err)
	}
	a, b := []byte("xxx"), []byte("yyyyy")
	n, err := p.Readv(fd, [][]byte{a, b})
	fmt.Println(n, err, a, b)

	f := p.NewFile(fd, "/dev/zero")
	defer f.Close()
	head := make([]byte, 4)
	_, err = io.ReadFull(f, head)
	fmt.Println(head, err)

	_, err = p.Open("/dev/nonexistent", unix.O_RDONLY, 0)
	fmt.Println(err)
	// Output:
	// 8 <nil> [0 0 0] [0 0 0 0 0]
	// [0 0 0 0] <nil>
	// open /dev/nonexistent: no such file or directory
}
