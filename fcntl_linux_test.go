package iovfs_test

// Differential test of fcntl's descriptor and status flags and of dup3:
// the same opens, F_GETFL/F_SETFL, F_GETFD/F_SETFD, F_DUPFD_CLOEXEC and
// dup3 calls on host files and on iovfs's, comparing every result.

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

func TestFcntlDifferential(t *testing.T) {
	dir := lockDir(t)
	if err := os.Mkdir(dir+"/d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Mkdir("/tmp/d", 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := p.Open("/tmp/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.Close(fd)
	targets := []struct{ host, iovfs string }{
		{dir + "/f", "/tmp/f"}, {dir + "/d", "/tmp/d"}, {"/dev/null", "/dev/null"}, {"/dev/zero", "/dev/zero"},
	}
	openBits := []int{unix.O_APPEND, unix.O_NONBLOCK, unix.O_DSYNC, unix.O_SYNC, unix.O_DIRECT,
		unix.O_NOATIME, unix.O_CLOEXEC, unix.O_NOFOLLOW, unix.O_DIRECTORY, unix.O_ASYNC, unix.O_NOCTTY, unix.O_PATH}
	setBits := []int{unix.O_APPEND, unix.O_NONBLOCK, unix.O_DIRECT, unix.O_NOATIME, unix.O_ASYNC,
		unix.O_SYNC, unix.O_DSYNC, unix.O_RDWR, unix.O_WRONLY, unix.O_CREAT, unix.O_TRUNC, unix.O_DIRECTORY, unix.O_NOFOLLOW}
	bits := func(rt *rapid.T, from []int, label string) int {
		v := 0
		for _, b := range from {
			if rapid.IntRange(0, 5).Draw(rt, label) == 1 {
				v |= b
			}
		}
		return v
	}
	compared, opened := 0, 0
	cmp := func(rt *rapid.T, what string, hv int, herr error, vv int, verr error) {
		compared++
		if errnoOf(herr) != errnoOf(verr) || herr == nil && hv != vv {
			rt.Fatalf("%s: host %#o %v, iovfs %#o %v", what, hv, herr, vv, verr)
		}
	}
	checks := 500
	if testenv.Quick() {
		checks = 100
	}
	old := flag.Lookup("rapid.checks").Value.String()
	flag.Set("rapid.checks", fmt.Sprint(checks))
	defer flag.Set("rapid.checks", old)
	rapid.Check(t, func(rt *rapid.T) {
		tg := rapid.IntRange(0, len(targets)-1).Draw(rt, "target")
		flags := rapid.SampledFrom([]int{unix.O_RDONLY, unix.O_WRONLY, unix.O_RDWR}).Draw(rt, "acc") | bits(rt, openBits, "open")
		hfd, herr := unix.Open(targets[tg].host, flags, 0)
		vfd, verr := p.Open(targets[tg].iovfs, flags, 0)
		cmp(rt, fmt.Sprintf("open %s %#o", targets[tg].iovfs, flags), 0, herr, 0, verr)
		if herr != nil {
			return
		}
		opened++
		defer unix.Close(hfd)
		defer p.Close(vfd)
		fcntl := func(what string, cmd, arg int) (int, int) {
			hv, herr := unix.FcntlInt(uintptr(hfd), cmd, arg)
			vv, verr := p.Fcntl(vfd, cmd, arg)
			cmp(rt, fmt.Sprintf("%s after open %s %#o", what, targets[tg].iovfs, flags), hv, herr, vv, verr)
			return hv, vv
		}
		fcntl("F_GETFL", unix.F_GETFL, 0)
		fcntl("F_GETFD", unix.F_GETFD, 0)
		for range rapid.IntRange(1, 4).Draw(rt, "n") {
			switch rapid.IntRange(0, 3).Draw(rt, "cmd") {
			case 0:
				arg := bits(rt, setBits, "setfl")
				fcntl(fmt.Sprintf("F_SETFL %#o", arg), unix.F_SETFL, arg)
				fcntl(fmt.Sprintf("F_GETFL after F_SETFL %#o", arg), unix.F_GETFL, 0)
			case 1:
				fcntl("F_SETFD", unix.F_SETFD, rapid.IntRange(0, 255).Draw(rt, "fdflags"))
				fcntl("F_GETFD", unix.F_GETFD, 0)
			case 2:
				// New descriptors differ in number between the sides: compare
				// their flags, not their numbers.
				cmd := rapid.SampledFrom([]int{unix.F_DUPFD, unix.F_DUPFD_CLOEXEC}).Draw(rt, "dupcmd")
				h2, herr := unix.FcntlInt(uintptr(hfd), cmd, 100)
				v2, verr := p.Fcntl(vfd, cmd, 100)
				cmp(rt, "F_DUPFD", 0, herr, 0, verr)
				if herr == nil {
					hf, herr := unix.FcntlInt(uintptr(h2), unix.F_GETFD, 0)
					vf, verr := p.Fcntl(v2, unix.F_GETFD, 0)
					cmp(rt, "F_GETFD of F_DUPFD's", hf, herr, vf, verr)
					hf, herr = unix.FcntlInt(uintptr(h2), unix.F_GETFL, 0)
					vf, verr = p.Fcntl(v2, unix.F_GETFL, 0)
					cmp(rt, "F_GETFL of F_DUPFD's", hf, herr, vf, verr)
					unix.Close(h2)
					p.Close(v2)
				}
			case 3:
				fl := rapid.SampledFrom([]int{0, unix.O_CLOEXEC, unix.O_NONBLOCK}).Draw(rt, "dup3")
				h2, _ := unix.Dup(hfd)
				v2, _ := p.Dup(vfd)
				herr := unix.Dup3(hfd, h2, fl)
				_, verr := p.Dup3(vfd, v2, fl)
				cmp(rt, "dup3", 0, herr, 0, verr)
				hf, herr := unix.FcntlInt(uintptr(h2), unix.F_GETFD, 0)
				vf, verr := p.Fcntl(v2, unix.F_GETFD, 0)
				cmp(rt, "F_GETFD of dup3's", hf, herr, vf, verr)
				herr = unix.Dup3(h2, h2, fl)
				_, verr = p.Dup3(v2, v2, fl)
				cmp(rt, "dup3 onto itself", 0, herr, 0, verr)
				unix.Close(h2)
				p.Close(v2)
			}
		}
	})
	t.Logf("%d results compared (%d successful opens), 0 divergences", compared, opened)
}
