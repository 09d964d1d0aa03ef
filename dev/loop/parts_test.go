package loop_test

import (
	"encoding/binary"
	"errors"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// mbr writes a DOS table entry (slot 0-3) into sector b.
func mbrEntry(b []byte, slot int, typ byte, start, count uint32) {
	e := b[0x1be+16*slot:]
	e[4] = typ
	binary.LittleEndian.PutUint32(e[8:], start)
	binary.LittleEndian.PutUint32(e[12:], count)
	b[510], b[511] = 0x55, 0xaa
}

// dosDisk is a 4 MiB disk: p1 at 1 MiB (512 KiB), an extended p2 from
// 2 MiB to the end with two logical partitions, p5 and p6.
func dosDisk() []byte {
	d := make([]byte, 4<<20)
	mbrEntry(d[0:512], 0, 0x83, 2048, 1024)
	mbrEntry(d[0:512], 1, 0x05, 4096, 4096)
	ebr1 := d[4096*512:]
	mbrEntry(ebr1, 0, 0x83, 1, 1023)        // p5: 4097..5119
	mbrEntry(ebr1, 1, 0x05, 1024, 2048)     // link to the next EBR at 5120
	mbrEntry(d[5120*512:], 0, 0x0c, 8, 512) // p6: 5128..5639
	for i := range 16 {
		d[5128*512+i] = byte(i + 1) // a mark at p6's start
	}
	return d
}

func partSize(t *testing.T, p *vfs.Proc, path string) (int64, error) {
	t.Helper()
	fd, err := p.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer p.Close(fd)
	var n uint64
	if _, err := p.Ioctl(fd, unix.BLKGETSIZE64, &n); err != nil {
		t.Fatal(err)
	}
	return int64(n), nil
}

func TestPartScan(t *testing.T) {
	p := newProc(t)
	back := tmpfsFile(t, p, "/tmp/disk", dosDisk(), unix.O_RDWR)
	fd := attach(t, p, 0, back, geom{flags: unix.LO_FLAGS_PARTSCAN}, unix.O_RDWR)
	want := map[string]int64{"loop0p1": 1024 * 512, "loop0p2": 1024, "loop0p5": 1023 * 512, "loop0p6": 512 * 512}
	for name, size := range want {
		got, err := partSize(t, p, "/dev/"+name)
		if err != nil || got != size {
			t.Errorf("%s: size %d, %v; want %d", name, got, err, size)
		}
	}
	for _, name := range []string{"loop0p3", "loop0p4", "loop0p7"} {
		if _, err := p.Stat("/dev/" + name); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("%s: %v, want ENOENT", name, err)
		}
	}
	st, err := p.Stat("/dev/loop0p5")
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		t.Fatalf("stat loop0p5: %+v %v", st, err)
	}
	// Bytes through the partition are the disk's at its offset.
	pf, err := p.Open("/dev/loop0p6", unix.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if _, err := p.Pread(pf, buf, 0); err != nil || buf[0] != 1 || buf[15] != 16 {
		t.Fatalf("read p6: %v %v", buf, err)
	}
	if n, err := p.Pread(pf, buf, 512*512); n != 0 || err != nil {
		t.Errorf("read at p6's end: %d %v, want 0", n, err)
	}
	if _, err := p.Pwrite(pf, []byte("written"), 512*512-7); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Pwrite(pf, []byte("x"), 512*512); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("write past p6's end: %v, want ENOSPC", err)
	}
	back2, _ := p.Open("/tmp/disk", unix.O_RDONLY, 0)
	got := make([]byte, 7)
	p.Pread(back2, got, 5640*512-7)
	p.Close(back2)
	if string(got) != "written" {
		t.Errorf("partition write landed wrong: %q", got)
	}
	// BLKRRPART: busy while a partition is open, then rescans.
	if _, err := p.Ioctl(fd, unix.BLKRRPART, 0); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("BLKRRPART with p6 open: %v, want EBUSY", err)
	}
	p.Close(pf)
	// A new table: one primary partition only.
	w, _ := p.Open("/dev/loop0", unix.O_RDWR, 0)
	sec := make([]byte, 512)
	mbrEntry(sec, 0, 0x83, 100, 200)
	p.Pwrite(w, sec, 0)
	p.Close(w)
	if _, err := p.Ioctl(fd, unix.BLKRRPART, 0); err != nil {
		t.Fatalf("BLKRRPART: %v", err)
	}
	if got, err := partSize(t, p, "/dev/loop0p1"); err != nil || got != 200*512 {
		t.Errorf("after rescan p1: %d %v", got, err)
	}
	if _, err := p.Stat("/dev/loop0p5"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("after rescan loop0p5: %v, want ENOENT", err)
	}
	// Clearing the device removes its partitions.
	if _, err := p.Ioctl(fd, unix.LOOP_CLR_FD, 0); err != nil {
		t.Fatal(err)
	}
	p.Close(fd)
	if _, err := p.Stat("/dev/loop0p1"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("after clear loop0p1: %v, want ENOENT", err)
	}
	p.Close(back)
}

func TestPartScanRules(t *testing.T) {
	p := newProc(t)
	back := tmpfsFile(t, p, "/tmp/disk", dosDisk(), unix.O_RDWR)
	fd := attach(t, p, 1, back, geom{}, unix.O_RDWR)
	defer p.Close(fd)
	if _, err := p.Stat("/dev/loop1p1"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("without PARTSCAN loop1p1: %v, want ENOENT", err)
	}
	if _, err := p.Ioctl(fd, unix.BLKRRPART, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("BLKRRPART without PARTSCAN: %v, want EINVAL", err)
	}
	// LOOP_SET_STATUS64 setting PARTSCAN scans.
	info, err := status(t, p, fd)
	if err != nil {
		t.Fatal(err)
	}
	info.Flags |= unix.LO_FLAGS_PARTSCAN
	if _, err := p.Ioctl(fd, unix.LOOP_SET_STATUS64, &info); err != nil {
		t.Fatal(err)
	}
	if got, err := partSize(t, p, "/dev/loop1p5"); err != nil || got != 1023*512 {
		t.Errorf("after SET_STATUS64 loop1p5: %d %v", got, err)
	}
	// An open partition keeps an autoclear device bound.
	pf, err := p.Open("/dev/loop1p1", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ioctl(fd, unix.LOOP_CLR_FD, 0); err != nil {
		t.Fatal(err)
	}
	p.Close(fd)
	fd = -1
	if _, err := p.Stat("/dev/loop1p1"); err != nil {
		t.Errorf("loop1p1 gone while open: %v", err)
	}
	p.Close(pf)
	if _, err := p.Stat("/dev/loop1p1"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("after last close loop1p1: %v, want ENOENT", err)
	}
	p.Close(back)

	// BLKRRPART needs CAP_SYS_ADMIN (EACCES).
	q := newProc(t)
	back = tmpfsFile(t, q, "/tmp/disk", dosDisk(), unix.O_RDWR)
	fd2 := attach(t, q, 2, back, geom{flags: unix.LO_FLAGS_PARTSCAN}, unix.O_RDWR)
	defer q.Close(fd2)
	if err := q.Setresuid(1000, 1000, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Ioctl(fd2, unix.BLKRRPART, 0); !errors.Is(err, syscall.EACCES) {
		t.Errorf("BLKRRPART unprivileged: %v, want EACCES", err)
	}
	q.Setresuid(0, 0, 0)
	if _, err := q.Ioctl(fd2, unix.BLKRRPART, 0); err != nil {
		t.Errorf("BLKRRPART as root: %v", err)
	}
}
