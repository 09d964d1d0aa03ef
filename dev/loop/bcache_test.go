package loop_test

import (
	"bytes"
	"errors"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/vfs"
)

// loopDevice returns the block device behind the open loop device fd,
// without keeping it open.
func loopDevice(t testing.TB, p *vfs.Proc, fd int) block.Device {
	t.Helper()
	b, err := p.Backing(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	d, ok := block.Of(b.Handle())
	if !ok {
		t.Fatal("not a block device")
	}
	return d
}

// checkBlocks reads n blocks of bs bytes through v and compares them with
// want; a nil want means every read must fail.
func checkBlocks(t *testing.T, what string, v *block.View, bs, n int, want []byte) {
	t.Helper()
	for blk := range n {
		b, err := v.Get(uint64(blk))
		if want == nil {
			if err == nil {
				b.Release()
				t.Fatalf("%s: block %d read from an unbound device", what, blk)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: block %d: %v", what, blk, err)
		}
		ok := bytes.Equal(b.Data(), want[blk*bs:(blk+1)*bs])
		b.Release()
		if !ok {
			t.Fatalf("%s: block %d is not the bound file's", what, blk)
		}
	}
}

// TestBufferCacheLoopRebinding: a buffer cache over a loop device never
// serves blocks of a file the device is no longer bound to: not after
// LOOP_CLR_FD (reads fail, as on an unbound device), not after
// LOOP_CONFIGURE with another file, and not after LOOP_SET_STATUS64 moves
// the offset or LOOP_SET_CAPACITY picks up a grown file.
func TestBufferCacheLoopRebinding(t *testing.T) {
	const bs, size = 1024, 64 << 10
	p := newProc(t)
	a, b := randBytes(1, size), randBytes(2, 2*size)
	fa := tmpfsFile(t, p, "/tmp/a", a, unix.O_RDWR)
	fb := tmpfsFile(t, p, "/tmp/b", b[:size], unix.O_RDWR)
	lfd := attach(t, p, 0, fa, geom{}, unix.O_RDWR)
	dev := loopDevice(t, p, lfd)
	c := block.NewCache(1 << 20)
	v := c.View(dev, bs)
	defer v.Close()
	checkBlocks(t, "bound to a", v, bs, size/bs, a)
	checkBlocks(t, "bound to a, cached", v, bs, size/bs, a)

	if _, err := p.Ioctl(lfd, unix.LOOP_CLR_FD, 0); err != nil {
		t.Fatal(err)
	}
	p.Close(lfd) // the last close clears the device
	checkBlocks(t, "after LOOP_CLR_FD", v, bs, size/bs, nil)

	lfd = attach(t, p, 0, fb, geom{}, unix.O_RDWR)
	defer p.Close(lfd)
	checkBlocks(t, "rebound to b", v, bs, size/bs, b)

	var info unix.LoopInfo64
	if _, err := p.Ioctl(lfd, unix.LOOP_GET_STATUS64, &info); err != nil {
		t.Fatal(err)
	}
	info.Offset = 4096
	if _, err := p.Ioctl(lfd, unix.LOOP_SET_STATUS64, &info); err != nil {
		t.Fatal(err)
	}
	checkBlocks(t, "offset 4096", v, bs, size/bs-4, b[4096:])
	info.Offset = 0
	if _, err := p.Ioctl(lfd, unix.LOOP_SET_STATUS64, &info); err != nil {
		t.Fatal(err)
	}

	// Grow b behind the device, through the tmpfs file; LOOP_SET_CAPACITY
	// picks the new size and drops what was cached.
	if n, err := p.Pwrite(fb, b[size:], size); n != size {
		t.Fatalf("grow b: %d, %v", n, err)
	}
	if _, err := p.Ioctl(lfd, unix.LOOP_SET_CAPACITY, 0); err != nil {
		t.Fatal(err)
	}
	checkBlocks(t, "after LOOP_SET_CAPACITY", v, bs, 2*size/bs, b)

	// Writes through the device itself are seen at once.
	w := randBytes(3, 3000)
	if n, err := p.Pwrite(lfd, w, 5000); n != len(w) {
		t.Fatalf("pwrite through the device: %d, %v", n, err)
	}
	copy(b[5000:], w)
	checkBlocks(t, "after a write through the device", v, bs, 2*size/bs, b)
	p.Close(fa)
	p.Close(fb)
}

// TestBufferCacheRebindRace: readers hammer the cache while the device is
// cleared and rebound between two files; once a rebinding has returned,
// every block read is the new file's.
func TestBufferCacheRebindRace(t *testing.T) {
	const bs, size = 512, 16 << 10
	p := newProc(t)
	files := [2][]byte{randBytes(4, size), randBytes(5, size)}
	fds := [2]int{tmpfsFile(t, p, "/tmp/a", files[0], unix.O_RDONLY), tmpfsFile(t, p, "/tmp/b", files[1], unix.O_RDONLY)}
	lfd := attach(t, p, 0, fds[0], geom{}, unix.O_RDONLY)
	dev := loopDevice(t, p, lfd)
	c := block.NewCache(8 << 10)
	v := c.View(dev, bs)
	defer v.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := r; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if b, err := v.Get(uint64(i % (size / bs))); err == nil {
					b.Release()
				} else if !errors.Is(err, syscall.EIO) {
					t.Errorf("Get: %v", err)
				}
			}
		}()
	}
	rounds := 200
	if testing.Short() {
		rounds = 40
	}
	for r := range rounds {
		if _, err := p.Ioctl(lfd, unix.LOOP_CLR_FD, 0); err != nil {
			t.Fatal(err)
		}
		p.Close(lfd)
		lfd = attach(t, p, 0, fds[(r+1)%2], geom{}, unix.O_RDONLY)
		checkBlocks(t, "after rebinding", v, bs, size/bs, files[(r+1)%2])
	}
	close(stop)
	wg.Wait()
	p.Close(lfd)
}
