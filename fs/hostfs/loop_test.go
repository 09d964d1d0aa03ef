package hostfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/iovfs/iovfs/block"
	"golang.org/x/sys/unix"
)

// TestLoopDirectAccess: a loop device over a hostfs file maps the host
// file, as it does for an imported one, so its direct access is the host
// file's bytes, shared both ways.
func TestLoopDirectAccess(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 1<<16)
	for i := range data {
		data[i] = byte(i * 13)
	}
	if err := os.WriteFile(filepath.Join(dir, "img"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := mountHost(t, dir, 0, "")
	bfd, err := p.Open("/mnt/h/img", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := p.Open("/dev/loop0", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := unix.LoopConfig{Fd: uint32(bfd)}
	cfg.Info.Offset = 4096
	if _, err := p.Ioctl(fd, unix.LOOP_CONFIGURE, &cfg); err != nil {
		t.Fatal(err)
	}
	b, err := p.Backing(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	da, ok := b.Handle().(interface{ Device() block.Device }).Device().(block.DirectAccessor)
	if !ok {
		t.Fatal("loop device has no direct access")
	}
	v, err := da.DirectAccess(100, 1000)
	if err != nil {
		t.Fatalf("direct access over a hostfs file: %v", err)
	}
	if !bytes.Equal(v, data[4196:5196]) {
		t.Fatal("direct access shows other bytes than the file")
	}
	hf, err := os.OpenFile(filepath.Join(dir, "img"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	hf.WriteAt([]byte("host"), 4196)
	if string(v[:4]) != "host" {
		t.Errorf("a host write is not visible in the mapping: %q", v[:4])
	}
	if _, err := p.Ioctl(fd, unix.LOOP_CLR_FD, 0); err != nil {
		t.Fatal(err)
	}
	p.Close(fd)
}
