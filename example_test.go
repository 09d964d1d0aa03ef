package iovfs_test

import (
	"fmt"
	"io"
	"os"

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

// Bring a host disk image into a process without root: import the file,
// attach a loop device to it, and read the device.
func Example_loopDevice() {
	img, err := os.CreateTemp("", "disk-*.img")
	if err != nil {
		panic(err)
	}
	defer os.Remove(img.Name())
	img.WriteAt([]byte("hello from the image"), 4096)
	img.Truncate(1 << 20)

	p, _ := iovfs.New()
	bfd, err := p.ImportFile(img)
	if err != nil {
		panic(err)
	}
	ctl, _ := p.Open("/dev/loop-control", unix.O_RDWR, 0)
	n, _ := p.Ioctl(ctl, unix.LOOP_CTL_GET_FREE, nil)
	dev := fmt.Sprintf("/dev/loop%d", n)
	lfd, _ := p.Open(dev, unix.O_RDONLY, 0)
	_, err = p.Ioctl(lfd, unix.LOOP_CONFIGURE, &unix.LoopConfig{Fd: uint32(bfd),
		Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_READ_ONLY | unix.LO_FLAGS_AUTOCLEAR}})
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 20)
	p.Pread(lfd, buf, 4096)
	st, _ := p.Fstat(lfd)
	fmt.Println(dev, string(buf), st.Size, st.Mode&unix.S_IFMT == unix.S_IFBLK)
	// Output:
	// /dev/loop0 hello from the image 1048576 true
}
