package iovfs_test

// Differential test of fallocate on tmpfs: random sequences of fallocate
// (every mode, valid or not), pwrite, ftruncate and the error cases, on a
// host tmpfs and an iovfs tmpfs, both mounted with size=256k; after every
// call the errno, size, st_blocks, the SEEK_DATA/SEEK_HOLE map and the
// bytes are compared.

import (
	"bytes"
	"flag"
	"fmt"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

const fallocLimit = 256 << 10

// fallocHost mounts a private host tmpfs with the test's size limit.
func fallocHost(t *testing.T) string {
	testenv.RequireRoot(t, "mounting a host tmpfs with a size limit")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", fallocLimit)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fallocState is what is compared after every call.
type fallocState struct {
	size, blocks int64
	seeks        string
	data         []byte
}

func TestFallocateDifferential(t *testing.T) {
	hdir := fallocHost(t)
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/mnt/f", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.Mount("tmpfs", "/mnt/f", "tmpfs", 0, fmt.Sprintf("size=%d", fallocLimit)); err != nil {
		t.Fatal(err)
	}
	checks := 300
	if testenv.Quick() || raceEnabled {
		checks = 60
	}
	old := flag.Lookup("rapid.checks").Value.String()
	flag.Set("rapid.checks", fmt.Sprint(checks))
	defer flag.Set("rapid.checks", old)

	seq, compared, successes := 0, 0, 0
	modes := []uint32{0, 0, 0, unix.FALLOC_FL_KEEP_SIZE, unix.FALLOC_FL_KEEP_SIZE,
		unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE, unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE,
		unix.FALLOC_FL_PUNCH_HOLE, unix.FALLOC_FL_ZERO_RANGE, unix.FALLOC_FL_ZERO_RANGE | unix.FALLOC_FL_KEEP_SIZE,
		unix.FALLOC_FL_COLLAPSE_RANGE, unix.FALLOC_FL_INSERT_RANGE, unix.FALLOC_FL_UNSHARE_RANGE,
		unix.FALLOC_FL_COLLAPSE_RANGE | unix.FALLOC_FL_KEEP_SIZE, 0x80, unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_ZERO_RANGE,
		0x1000}
	rapid.Check(t, func(rt *rapid.T) {
		seq++
		name := fmt.Sprintf("s%d", seq)
		hpath, vpath := hdir+"/"+name, "/mnt/f/"+name
		// Two files share the size limit; each side gets the same fds.
		var hfd, vfd [2]int
		for i := range hfd {
			hfd[i], err = unix.Open(fmt.Sprint(hpath, i), unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
			if err != nil {
				rt.Fatal(err)
			}
			vfd[i], err = p.Open(fmt.Sprint(vpath, i), unix.O_CREAT|unix.O_RDWR, 0o644)
			if err != nil {
				rt.Fatal(err)
			}
		}
		hro, _ := unix.Open(fmt.Sprint(hpath, 0), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		vro, _ := p.Open(fmt.Sprint(vpath, 0), unix.O_RDONLY, 0)
		hdir, _ := unix.Open(hdir, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		vdir, _ := p.Open("/mnt/f", unix.O_RDONLY, 0)
		hnull, _ := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
		vnull, _ := p.Open("/dev/null", unix.O_RDWR, 0)
		defer func() {
			for i := range hfd {
				unix.Close(hfd[i])
				p.Close(vfd[i])
				unix.Unlink(fmt.Sprint(hpath, i))
				p.Unlink(fmt.Sprint(vpath, i))
			}
			for _, fd := range []int{hro, hdir, hnull} {
				unix.Close(fd)
			}
			for _, fd := range []int{vro, vdir, vnull} {
				p.Close(fd)
			}
		}()
		n := rapid.IntRange(1, 25).Draw(rt, "steps")
		for k := 0; k < n; k++ {
			i := rapid.IntRange(0, 1).Draw(rt, "file")
			var what string
			var herr, verr error
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op < 6:
				mode := rapid.SampledFrom(modes).Draw(rt, "mode")
				off := rapid.SampledFrom([]int64{0, 100, 4096, 5000, 8192, 12000, 40000, 100000, 300000, -1, 1 << 62}).Draw(rt, "off")
				ln := rapid.SampledFrom([]int64{1, 100, 4096, 4097, 8192, 10000, 60000, 200000, 300000, 0, -5, 1<<63 - 1}).Draw(rt, "len")
				hf, vf := hfd[i], vfd[i]
				switch rapid.IntRange(0, 12).Draw(rt, "target") {
				case 10:
					hf, vf = hro, vro
				case 11:
					hf, vf = hdir, vdir
				case 12:
					hf, vf = hnull, vnull
				}
				what = fmt.Sprintf("fallocate(mode %#x, off %d, len %d)", mode, off, ln)
				herr = unix.Fallocate(hf, mode, off, ln)
				verr = p.Fallocate(vf, mode, off, ln)
			case op < 8:
				off := rapid.Int64Range(0, 70000).Draw(rt, "woff")
				b := bytes.Repeat([]byte{byte(k + 1)}, rapid.IntRange(1, 9000).Draw(rt, "wlen"))
				what = fmt.Sprintf("pwrite(%d bytes at %d)", len(b), off)
				var hn, vn int
				hn, herr = unix.Pwrite(hfd[i], b, off)
				vn, verr = p.Pwrite(vfd[i], b, off)
				if herr == nil && hn != vn {
					rt.Fatalf("%s: host wrote %d, iovfs %d", what, hn, vn)
				}
			default:
				size := rapid.Int64Range(0, 70000).Draw(rt, "size")
				what = fmt.Sprintf("ftruncate(%d)", size)
				herr = unix.Ftruncate(hfd[i], size)
				verr = p.Ftruncate(vfd[i], size)
			}
			compared++
			if errnoOf(herr) != errnoOf(verr) {
				rt.Fatalf("file %d: %s: host %v, iovfs %v", i, what, herr, verr)
			}
			if herr == nil {
				successes++
			}
			for j := range hfd {
				hs, vs := hostFallocState(rt, hfd[j]), vfsFallocState(rt, p, vfd[j])
				compared++
				if hs.size != vs.size || hs.blocks != vs.blocks || hs.seeks != vs.seeks || !bytes.Equal(hs.data, vs.data) {
					rt.Fatalf("after %s on file %d, file %d: host size %d blocks %d seeks %s; iovfs size %d blocks %d seeks %s; bytes equal %v",
						what, i, j, hs.size, hs.blocks, hs.seeks, vs.size, vs.blocks, vs.seeks, bytes.Equal(hs.data, vs.data))
				}
			}
		}
	})
	t.Logf("%d sequences, %d results compared (%d successful calls), 0 divergences", seq, compared, successes)
}

// seekMap lists SEEK_DATA and SEEK_HOLE from every 2 KiB step of the
// file's first 512 KiB, and from its last byte.
func seekMap(size int64, seek func(off int64, whence int) (int64, error)) string {
	var b bytes.Buffer
	for off := int64(0); off <= size; off += 2048 {
		if off > 512<<10 {
			off = size - 1
		}
		d, derr := seek(off, unix.SEEK_DATA)
		h, herr := seek(off, unix.SEEK_HOLE)
		if derr != nil {
			d = -1
		}
		if herr != nil {
			h = -1
		}
		fmt.Fprintf(&b, "%d:%d/%d,%d/%d ", off, d, errnoOf(derr), h, errnoOf(herr))
	}
	return b.String()
}

func hostFallocState(rt *rapid.T, fd int) fallocState {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		rt.Fatal(err)
	}
	s := fallocState{size: st.Size, blocks: st.Blocks}
	s.seeks = seekMap(st.Size, func(off int64, whence int) (int64, error) { return unix.Seek(fd, off, whence) })
	s.data = make([]byte, min(st.Size, 1<<20))
	unix.Pread(fd, s.data, 0)
	return s
}

func vfsFallocState(rt *rapid.T, p *vfs.Proc, fd int) fallocState {
	st, err := p.Fstat(fd)
	if err != nil {
		rt.Fatal(err)
	}
	s := fallocState{size: st.Size, blocks: st.Blocks}
	s.seeks = seekMap(st.Size, func(off int64, whence int) (int64, error) { return p.Seek(fd, off, whence) })
	s.data = make([]byte, min(st.Size, 1<<20))
	p.Pread(fd, s.data, 0)
	return s
}
