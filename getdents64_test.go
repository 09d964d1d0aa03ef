package iovfs_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestGetdents64 lists a tmpfs directory (a vfs.DirReader: the VFS adds
// "." and "..") with getdents64 in buffers of every size from one too
// small for any record up: the records, resumed call after call, must be
// Getdents' entries (name, ino, type, d_off) in the same order, each
// d_reclen 19 bytes plus the name and its NUL rounded up to 8, and a
// buffer too small for the next record gives EINVAL.
func TestGetdents64(t *testing.T) {
	p := newProc(t)
	must(t, p.Mkdir("/tmp/d", 0o755))
	for i := range 40 {
		createFile(t, p, fmt.Sprintf("/tmp/d/%0*d", 1+i%30, i), "")
	}
	fd, err := p.Open("/tmp/d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	want, err := p.Getdents(fd)
	must(t, err)
	for size := 8; size <= 200; size += 5 {
		if _, err := p.Seek(fd, 0, unix.SEEK_SET); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, size)
		i := 0
		for {
			n, err := p.Getdents64(fd, buf)
			if errors.Is(err, unix.EINVAL) {
				if i < len(want) && (19+len(want[i].Name)+1+7)&^7 <= size {
					t.Fatalf("size %d: EINVAL before %q, which fits", size, want[i].Name)
				}
				break
			}
			must(t, err)
			if n == 0 {
				if i != len(want) {
					t.Fatalf("size %d: end after %d of %d entries", size, i, len(want))
				}
				break
			}
			for o := 0; o < n; i++ {
				rl := int(binary.LittleEndian.Uint16(buf[o+16:]))
				w := want[i]
				name := string(buf[o+19 : o+19+len(w.Name)])
				if rl != (19+len(w.Name)+1+7)&^7 || name != w.Name || buf[o+19+len(w.Name)] != 0 ||
					binary.LittleEndian.Uint64(buf[o:]) != w.Ino || int64(binary.LittleEndian.Uint64(buf[o+8:])) != w.Off || buf[o+18] != w.Type {
					t.Fatalf("size %d: record %d %x, want %+v", size, i, buf[o:o+rl], w)
				}
				o += rl
			}
		}
	}
}
