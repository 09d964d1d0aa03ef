package fuse

import (
	"bytes"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// lineLog is a log.Logger target that keeps the lines written.
type lineLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

// count returns how many logged lines contain s, and forgets them.
func (l *lineLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := strings.Count(l.buf.String(), s)
	l.buf.Reset()
	return n
}

// TestPassthrough exports a hostfs mount and a tmpfs and reads and writes
// a file on each, counting the READ and WRITE requests the server sees in
// its debug log. On hostfs the file is opened with passthrough: the
// kernel registers one backing file for two opens of the file, no READ
// or WRITE reaches the server, the bytes are the host file's both ways
// and the size after a write is right; after the last close the backing
// file is unregistered. With NoPassthrough, and on tmpfs, every read is a
// READ served by iovfs.
func TestPassthrough(t *testing.T) {
	host := t.TempDir()
	data := bytes.Repeat([]byte("passthrough "), 100000)
	if err := os.WriteFile(filepath.Join(host, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		fstype string
		noPT   bool
	}{{"hostfs", false}, {"hostfs", true}, {"tmpfs", false}} {
		name := c.fstype
		if c.noPT {
			name += "-nopassthrough"
		}
		t.Run(name, func(t *testing.T) {
			p := newProc(t)
			src := "none"
			if c.fstype == "hostfs" {
				src = host
			}
			if err := p.Mount(src, "/mnt", c.fstype, 0, ""); err != nil {
				t.Fatal(err)
			}
			if c.fstype == "tmpfs" {
				fd, err := p.Open("/mnt/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				p.Write(fd, data)
				p.Close(fd)
			}
			var ll lineLog
			mnt, s := export(t, p, "/mnt", Options{Debug: true, Logger: log.New(&ll, "", 0), NoPassthrough: c.noPT})
			pt := c.fstype == "hostfs" && !c.noPT
			f1, err := os.OpenFile(filepath.Join(mnt, "f"), os.O_RDWR|unix.O_DIRECT, 0)
			if err != nil {
				t.Fatal(err)
			}
			f2, err := os.Open(filepath.Join(mnt, "f"))
			if err != nil {
				t.Fatal(err)
			}
			if n := ll.count("BACKING_OPEN"); pt && n != 1 || !pt && n != 0 {
				t.Errorf("two opens registered %d backing files, want %d", n, map[bool]int{true: 1}[pt])
			}
			buf := make([]byte, 2<<20)
			n, err := unix.Pread(int(f1.Fd()), buf[:len(data)&^4095], 0)
			if err != nil || !bytes.Equal(buf[:n], data[:len(data)&^4095]) {
				t.Errorf("O_DIRECT pread: %d, %v, or the bytes differ", n, err)
			}
			got, err := os.ReadFile(filepath.Join(mnt, "f"))
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("read through the export: %d bytes, %v; want the file's %d", len(got), err, len(data))
			}
			if n := ll.count(": READ "); pt && n != 0 || !pt && n == 0 {
				t.Errorf("the server saw %d READ requests (passthrough %v)", n, pt)
			}
			if _, err := f2.ReadAt(buf[:100], 0); err != nil || !bytes.Equal(buf[:100], data[:100]) {
				t.Errorf("read of the second open: %v", err)
			}
			tail := []byte("appended through the export")
			if _, err := f1.WriteAt(append(tail, make([]byte, 4096-len(tail))...), int64(len(data)&^4095+4096*64)); err != nil {
				t.Fatal(err)
			}
			if n := ll.count(": WRITE "); pt && n != 0 || !pt && n == 0 {
				t.Errorf("the server saw %d WRITE requests (passthrough %v)", n, pt)
			}
			want := int64(len(data)&^4095 + 4096*65)
			if fi, err := os.Stat(filepath.Join(mnt, "f")); err != nil || fi.Size() != want {
				t.Errorf("size through the export after the write: %v, %v; want %d", fi.Size(), err, want)
			}
			if c.fstype == "hostfs" {
				hb, err := os.ReadFile(filepath.Join(host, "f"))
				if err != nil || int64(len(hb)) != want || !bytes.HasPrefix(hb[want-4096:], tail) {
					t.Errorf("host file after the write: %d bytes, %v", len(hb), err)
				}
				os.WriteFile(filepath.Join(host, "f"), data, 0o644) // for the next run
			}
			f1.Close()
			f2.Close()
			// RELEASE is asynchronous: an unmount waits for it.
			if err := s.Unmount(); err != nil {
				t.Fatal(err)
			}
			if n := ll.count("BACKING_CLOSE"); pt && n != 1 || !pt && n != 0 {
				t.Errorf("%d backing files unregistered, want %d", n, map[bool]int{true: 1}[pt])
			}
		})
	}
}
