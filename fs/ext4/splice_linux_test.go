package ext4_test

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSpliceDaxFault: bytes spliced from a file on a dax mount are
// references to the loop device's mapping of an imported host file; when
// another process truncates that file while a pipe holds them, reading
// the pipe, or splicing it into a file, gives EIO instead of crashing
// the program, and a splice into /dev/null, which reads nothing, still
// drops them.
func TestSpliceDaxFault(t *testing.T) {
	img := mkImage(t, 8192, func(t testing.TB, d string) { populate(t, d) }, "-t", "ext4", "-b", "4096")
	orig, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	p := mountImage(t, img, viaLoop, "dax")
	ffd, err := p.Open("/mnt/big", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ffd)
	r, w, err := p.Pipe2(0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(r)
	defer p.Close(w)
	null, err := p.Open("/dev/null", unix.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(null)
	out, err := p.Open("/tmp/out", unix.O_RDWR|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(out)
	for _, sink := range []string{"read", "splice into a tmpfs file"} {
		off := int64(0)
		if n, err := p.Splice(ffd, &off, w, nil, 3*4096, 0); n != 3*4096 || err != nil {
			t.Fatalf("splice before the truncation: %d, %v", n, err)
		}
		// Another process shrinks the image under the mapping.
		if err := os.Truncate(img, 4096); err != nil {
			t.Fatal(err)
		}
		var n int64
		if sink == "read" {
			k, e := p.Read(r, make([]byte, 100))
			n, err = int64(k), e
		} else {
			n, err = p.Splice(r, nil, out, nil, 3*4096, 0)
		}
		if n != 0 || !errors.Is(err, syscall.EIO) {
			t.Errorf("%s of a pipe holding a truncated dax file's memory: %d, %v; want 0, EIO", sink, n, err)
		}
		if n, err := p.Splice(r, nil, null, nil, 3*4096, 0); n != 3*4096 || err != nil {
			t.Errorf("after %s: splice into /dev/null: %d, %v; want all", sink, n, err)
		}
		if err := os.WriteFile(img, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
