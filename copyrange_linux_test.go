package iovfs_test

// Differential test of copy_file_range: random copies between files of one
// tmpfs, across two tmpfs mounts, within one file, and from or to a
// directory, /dev/null and descriptors of the wrong access mode, with nil
// and given offsets (negative, huge, past the end), on the host and on
// iovfs. Counts, errnos, offsets, file positions and contents are
// compared after every call.

import (
	"bytes"
	"flag"
	"fmt"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

func TestCopyFileRangeDifferential(t *testing.T) {
	h1 := lockDir(t)
	h2 := fallocHost(t) // a second file system, for EXDEV
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/mnt/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("tmpfs", "/mnt/c", "tmpfs", 0, fmt.Sprintf("size=%d", fallocLimit)); err != nil {
		t.Fatal(err)
	}
	checks := 500
	if testenv.Quick() || raceEnabled {
		checks = 100
	}
	old := flag.Lookup("rapid.checks").Value.String()
	flag.Set("rapid.checks", fmt.Sprint(checks))
	defer flag.Set("rapid.checks", old)

	type fdPair struct{ h, v int }
	seq, compared, copied := 0, 0, 0
	outcomes := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		seq++
		files := []struct{ h, v string }{
			{fmt.Sprintf("%s/a%d", h1, seq), fmt.Sprintf("/tmp/a%d", seq)},
			{fmt.Sprintf("%s/b%d", h1, seq), fmt.Sprintf("/tmp/b%d", seq)},
			{fmt.Sprintf("%s/c%d", h2, seq), fmt.Sprintf("/mnt/c/c%d", seq)},
		}
		var fds []fdPair
		open := func(h, v string, flags int) {
			hfd, herr := unix.Open(h, flags|unix.O_CLOEXEC, 0o644)
			vfd, verr := p.Open(v, flags, 0o644)
			if herr != nil || verr != nil {
				rt.Fatalf("open %s: host %v, iovfs %v", v, herr, verr)
			}
			fds = append(fds, fdPair{hfd, vfd})
		}
		for i, f := range files {
			open(f.h, f.v, unix.O_CREAT|unix.O_RDWR)
			data := bytes.Repeat([]byte{byte('a' + i)}, rapid.IntRange(0, 20000).Draw(rt, "size"))
			for j := range data {
				data[j] += byte(j % 7)
			}
			unix.Write(fds[i].h, data)
			p.Write(fds[i].v, data)
		}
		open(files[0].h, files[0].v, unix.O_RDONLY)
		open(files[1].h, files[1].v, unix.O_WRONLY|unix.O_APPEND)
		open(files[1].h, files[1].v, unix.O_WRONLY)
		open(h1, "/tmp", unix.O_RDONLY)
		open("/dev/null", "/dev/null", unix.O_RDWR)
		defer func() {
			for _, fd := range fds {
				unix.Close(fd.h)
				p.Close(fd.v)
			}
			for _, f := range files {
				unix.Unlink(f.h)
				p.Unlink(f.v)
			}
		}()
		offs := []int64{0, 100, 1, 4096, 5000, 9999, 20000, 30000, -1, -4096, 1<<63 - 3, 1 << 62}
		drawOff := func(label string) *int64 {
			if rapid.IntRange(0, 2).Draw(rt, label+"nil") == 0 {
				return nil
			}
			o := rapid.SampledFrom(offs).Draw(rt, label)
			return &o
		}
		n := rapid.IntRange(1, 12).Draw(rt, "steps")
		for k := 0; k < n; k++ {
			// Mostly descriptors that can copy (rw files, the read-only
			// one as input, the write-only one as output), sometimes any.
			in := rapid.SampledFrom([]int{0, 1, 3, 0, 1, 2}).Draw(rt, "in")
			out := rapid.SampledFrom([]int{1, 0, 5, 1, 2, 0}).Draw(rt, "out")
			if rapid.IntRange(0, 3).Draw(rt, "anyfd") == 3 {
				in = rapid.IntRange(0, len(fds)-1).Draw(rt, "in")
				out = rapid.IntRange(0, len(fds)-1).Draw(rt, "out")
			}
			if rapid.IntRange(0, 4).Draw(rt, "seek") == 0 {
				pos := rapid.SampledFrom(offs[:8]).Draw(rt, "pos")
				unix.Seek(fds[in].h, pos, unix.SEEK_SET)
				p.Seek(fds[in].v, pos, unix.SEEK_SET)
			}
			roff, woff := drawOff("roff"), drawOff("woff")
			count := rapid.SampledFrom([]int{4096, 10, 7000, 1, 20000, 1 << 20, 0, -1}).Draw(rt, "n")
			flags := 0
			if rapid.IntRange(0, 20).Draw(rt, "flags") == 20 {
				flags = 1
			}
			cp := func(o *int64) *int64 {
				if o == nil {
					return nil
				}
				c := *o
				return &c
			}
			hr, hw, vr, vw := cp(roff), cp(woff), cp(roff), cp(woff)
			hn, herr := unix.CopyFileRange(fds[in].h, hr, fds[out].h, hw, count, flags)
			vn, verr := p.CopyFileRange(fds[in].v, vr, fds[out].v, vw, count, flags)
			what := fmt.Sprintf("copy_file_range(fd %d, %v, fd %d, %v, %d, %d)", in, show(roff), out, show(woff), count, flags)
			compared++
			if herr != nil {
				hn = 0
			}
			if errnoOf(herr) != errnoOf(verr) || hn != vn {
				rt.Fatalf("%s: host %d %v, iovfs %d %v", what, hn, herr, vn, verr)
			}
			if hn > 0 {
				copied++
			}
			outcomes[fmt.Sprint(errnoOf(herr))]++
			compared++
			if show(hr) != show(vr) || show(hw) != show(vw) {
				rt.Fatalf("%s: offsets host %s %s, iovfs %s %s", what, show(hr), show(hw), show(vr), show(vw))
			}
			for i, fd := range fds {
				hp, herr := unix.Seek(fd.h, 0, unix.SEEK_CUR)
				vp, verr := p.Seek(fd.v, 0, unix.SEEK_CUR)
				compared++
				if herr == nil && verr == nil && hp != vp {
					rt.Fatalf("after %s: fd %d at %d on the host, %d on iovfs", what, i, hp, vp)
				}
			}
			for i := range files {
				hb := make([]byte, 64<<10)
				vb := make([]byte, 64<<10)
				hk, _ := unix.Pread(fds[i].h, hb, 0)
				vk, _ := p.Pread(fds[i].v, vb, 0)
				compared++
				if !bytes.Equal(hb[:max(hk, 0)], vb[:vk]) {
					rt.Fatalf("after %s: file %d differs (%d and %d bytes)", what, i, hk, vk)
				}
			}
		}
	})
	t.Logf("%d sequences, %d results compared (%d copies that moved bytes), 0 divergences; errnos: %v", seq, compared, copied, outcomes)
}

func show(o *int64) string {
	if o == nil {
		return "nil"
	}
	return fmt.Sprint(*o)
}
