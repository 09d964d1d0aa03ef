package vfs_test

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestPipe2GetflKernel compares F_GETFL of both ends of pipe2 with the
// host's, for each combination of the status flags pipe2 takes, and
// after F_SETFL sets and clears O_DIRECT on each end.
func TestPipe2GetflKernel(t *testing.T) {
	p := newPipeProc(t)
	for _, fl := range []int{0, unix.O_NONBLOCK, unix.O_DIRECT, unix.O_DIRECT | unix.O_NONBLOCK} {
		var h [2]int
		if err := unix.Pipe2(h[:], fl|unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		r, w, err := p.Pipe2(fl)
		if err != nil {
			t.Fatal(err)
		}
		for i, pair := range [][2]int{{h[0], r}, {h[1], w}} {
			end := [2]string{"read", "write"}[i]
			cmp := func(step string) {
				t.Helper()
				hv, herr := unix.FcntlInt(uintptr(pair[0]), unix.F_GETFL, 0)
				vv, verr := p.Fcntl(pair[1], unix.F_GETFL, 0)
				if hv != vv || herr != verr {
					t.Errorf("pipe2(%#o) %s end, %s: F_GETFL %#o, %v; kernel %#o, %v", fl, end, step, vv, verr, hv, herr)
				}
			}
			cmp("new")
			for _, set := range []int{unix.O_DIRECT, 0, unix.O_DIRECT | unix.O_NONBLOCK} {
				_, herr := unix.FcntlInt(uintptr(pair[0]), unix.F_SETFL, set)
				_, verr := p.Fcntl(pair[1], unix.F_SETFL, set)
				if herr != verr {
					t.Errorf("pipe2(%#o) %s end: F_SETFL %#o gives %v; kernel %v", fl, end, set, verr, herr)
				}
				cmp("after F_SETFL")
			}
		}
		unix.Close(h[0])
		unix.Close(h[1])
		p.Close(r)
		p.Close(w)
	}
}
