package iovfs_test

// A differential test of advisory locks: random sequences of flock, POSIX
// and OFD lock calls from several processes, on a host tmpfs file and on an
// iovfs tmpfs file, with every errno and every F_GETLK answer compared.
//
// On the host each process is a child of the test binary (POSIX locks
// belong to a process, so owners need processes of their own); the
// children take steps as JSON on stdin and answer on stdout. On iovfs each
// process is a Proc of one namespace. Every process holds a few
// descriptors of the file, each its own open file description, which own
// the OFD and flock locks.

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

const lockChildEnv = "IOVFS_LOCK_CHILD"

// lockStep is one call, sent to a host child as JSON.
type lockStep struct {
	Op    string // open, close, seek, write, setlk, getlk, flock
	Path  string `json:",omitempty"`
	Slot  int
	Flags int   `json:",omitempty"` // open flags
	Cmd   int   `json:",omitempty"` // fcntl command
	How   int   `json:",omitempty"` // flock operation
	Off   int64 `json:",omitempty"` // seek offset, write size
	Lk    unix.Flock_t
}

// lockResult is a call's outcome. Pid is an owner index after mapping:
// the index of the process, -1 for an OFD lock.
type lockResult struct {
	Errno int
	Lk    unix.Flock_t
}

// TestLockChild is the host side's process: it runs only as a child of
// TestLockDifferential.
func TestLockChild(t *testing.T) {
	if os.Getenv(lockChildEnv) != "1" {
		t.Skip("runs as a child of TestLockDifferential")
	}
	fds := map[int]int{}
	dec := json.NewDecoder(os.Stdin)
	enc := json.NewEncoder(os.Stdout)
	for {
		var s lockStep
		if err := dec.Decode(&s); err != nil {
			os.Exit(0)
		}
		var r lockResult
		var err error
		fd, ok := fds[s.Slot]
		if !ok {
			fd = 1 << 20 // EBADF
		}
		switch s.Op {
		case "reset":
			for k, fd := range fds {
				unix.Close(fd)
				delete(fds, k)
			}
		case "open":
			var nfd int
			nfd, err = unix.Open(s.Path, s.Flags|unix.O_CLOEXEC, 0o644)
			if err == nil {
				fds[s.Slot] = nfd
			}
		case "close":
			err = unix.Close(fd)
			delete(fds, s.Slot)
		case "seek":
			_, err = unix.Seek(fd, s.Off, unix.SEEK_SET)
		case "write":
			err = unix.Ftruncate(fd, s.Off)
		case "setlk", "getlk":
			r.Lk = s.Lk
			err = unix.FcntlFlock(uintptr(fd), s.Cmd, &r.Lk)
		case "flock":
			err = unix.Flock(fd, s.How)
		}
		r.Errno = int(errnoOf(err))
		if err := enc.Encode(r); err != nil {
			os.Exit(1)
		}
	}
}

// hostProc is one host child.
type hostProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
	enc *json.Encoder
}

func startLockChild(t *testing.T) *hostProc {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockChildEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &hostProc{cmd: cmd, in: in, out: json.NewDecoder(bufio.NewReader(out)), enc: json.NewEncoder(in)}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return h
}

func (h *hostProc) do(t interface{ Fatalf(string, ...any) }, s lockStep) lockResult {
	if err := h.enc.Encode(s); err != nil {
		t.Fatalf("to child: %v", err)
	}
	var r lockResult
	if err := h.out.Decode(&r); err != nil {
		t.Fatalf("from child: %v", err)
	}
	return r
}

// vfsLockSide runs the same steps on iovfs Procs.
type vfsLockSide struct {
	procs []*vfs.Proc
	fds   []map[int]int
}

func (v *vfsLockSide) do(i int, s lockStep) lockResult {
	p := v.procs[i]
	fd, ok := v.fds[i][s.Slot]
	if !ok {
		fd = 1 << 20
	}
	var r lockResult
	var err error
	switch s.Op {
	case "open":
		var nfd int
		nfd, err = p.Open(s.Path, s.Flags|unix.O_CLOEXEC, 0o644)
		if err == nil {
			v.fds[i][s.Slot] = nfd
		}
	case "close":
		err = p.Close(fd)
		delete(v.fds[i], s.Slot)
	case "seek":
		_, err = p.Seek(fd, s.Off, unix.SEEK_SET)
	case "write":
		err = p.Ftruncate(fd, s.Off)
	case "setlk", "getlk":
		r.Lk = s.Lk
		err = p.FcntlFlock(fd, s.Cmd, &r.Lk)
	case "flock":
		err = p.Flock(fd, s.How)
	}
	r.Errno = int(errnoOf(err))
	return r
}

// lockDir returns a directory on a host tmpfs: /dev/shm when it is one.
func lockDir(t *testing.T) string {
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC {
		d, err := os.MkdirTemp("/dev/shm", "iovfs-lock")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	return hostTmpfs(t)
}

const lockProcs, lockSlots = 3, 3

func TestLockDifferential(t *testing.T) {
	dir := lockDir(t)
	host := make([]*hostProc, lockProcs)
	hostPid := map[int32]int32{-1: -1}
	for i := range host {
		host[i] = startLockChild(t)
		hostPid[int32(host[i].cmd.Process.Pid)] = int32(i)
	}
	p0, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	// 2,000 sequences take about 2 s (15 s under -race, which runs 300);
	// -short runs 200.
	checks := 2000
	if raceEnabled {
		checks = 300
	}
	if testenv.Quick() {
		checks = 200
	}
	old := flag.Lookup("rapid.checks").Value.String()
	flag.Set("rapid.checks", fmt.Sprint(checks))
	defer flag.Set("rapid.checks", old)
	seq, steps, compared := 0, 0, 0
	outcomes := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		seq++
		name := fmt.Sprintf("f%d", seq)
		hpath, vpath := dir+"/"+name, "/tmp/"+name
		v := &vfsLockSide{}
		vPid := map[int32]int32{-1: -1}
		for i := 0; i < lockProcs; i++ {
			p := vfs.NewProc(p0.Namespace())
			v.procs = append(v.procs, p)
			v.fds = append(v.fds, map[int]int{})
			vPid[int32(p.Pid())] = int32(i)
		}
		// A failed sequence (rapid shrinks by rerunning) leaves
		// descriptors open: start from none.
		for i := range host {
			host[i].do(rt, lockStep{Op: "reset"})
		}
		defer func() {
			for i, p := range v.procs {
				for _, fd := range v.fds[i] {
					p.Close(fd)
				}
			}
		}()
		run := func(i int, s lockStep) {
			steps++
			hs := s
			if s.Op == "open" {
				hs.Path = hpath
				s.Path = vpath
			}
			hr := host[i].do(rt, hs)
			vr := v.do(i, s)
			if hr.Errno == 0 && (s.Op == "getlk") {
				hr.Lk.Pid = mapPid(hostPid, hr.Lk.Pid)
				vr.Lk.Pid = mapPid(vPid, vr.Lk.Pid)
			}
			compared++
			key := fmt.Sprintf("%s/%v", s.Op, syscall.Errno(hr.Errno))
			if s.Op == "getlk" && hr.Errno == 0 && hr.Lk.Type != unix.F_UNLCK {
				key = "getlk/found"
			}
			outcomes[key]++
			if hr != vr {
				rt.Fatalf("proc %d step %+v: host %+v, iovfs %+v", i, s, hr, vr)
			}
		}
		accs := []int{unix.O_RDWR, unix.O_RDONLY, unix.O_WRONLY}
		for i := 0; i < lockProcs; i++ {
			for s := 0; s < lockSlots; s++ {
				run(i, lockStep{Op: "open", Slot: s, Flags: unix.O_CREAT | accs[(i+s)%3]})
			}
		}
		n := rapid.IntRange(10, 60).Draw(rt, "steps")
		for k := 0; k < n; k++ {
			i := rapid.IntRange(0, lockProcs-1).Draw(rt, "proc")
			s := lockStep{Slot: rapid.IntRange(0, lockSlots-1).Draw(rt, "slot")}
			switch op := rapid.IntRange(0, 19).Draw(rt, "op"); {
			case op < 9:
				s.Op = "setlk"
				s.Cmd = rapid.SampledFrom([]int{unix.F_SETLK, unix.F_OFD_SETLK}).Draw(rt, "cmd")
				s.Lk = drawFlock(rt, false)
			case op < 13:
				s.Op = "getlk"
				s.Cmd = rapid.SampledFrom([]int{unix.F_GETLK, unix.F_OFD_GETLK}).Draw(rt, "cmd")
				s.Lk = drawFlock(rt, true)
			case op < 16:
				s.Op = "flock"
				s.How = rapid.SampledFrom([]int{
					unix.LOCK_SH | unix.LOCK_NB, unix.LOCK_EX | unix.LOCK_NB, unix.LOCK_UN,
					unix.LOCK_UN | unix.LOCK_NB, 0, unix.LOCK_SH | unix.LOCK_EX, 32}).Draw(rt, "how")
			case op < 18:
				// Close and reopen: POSIX locks of the process go with any
				// descriptor, OFD and flock locks with their description.
				run(i, lockStep{Op: "close", Slot: s.Slot})
				s.Op = "open"
				s.Flags = rapid.SampledFrom(accs).Draw(rt, "acc")
			case op < 19:
				s.Op = "seek"
				s.Off = rapid.Int64Range(0, 40).Draw(rt, "pos")
			default:
				s.Op = "write"
				s.Off = rapid.Int64Range(0, 40).Draw(rt, "size")
			}
			run(i, s)
		}
		// Every lock goes with the descriptors.
		for i := 0; i < lockProcs; i++ {
			for s := 0; s < lockSlots; s++ {
				run(i, lockStep{Op: "close", Slot: s})
			}
		}
	})
	t.Logf("%d sequences, %d steps, %d results compared, 0 divergences; outcomes: %v", seq, steps, compared, outcomes)
}

func mapPid(m map[int32]int32, pid int32) int32 {
	if i, ok := m[pid]; ok {
		return i
	}
	return -100 - pid // unknown: keeps the divergence visible
}

// drawFlock draws a lock request over a small range, so that locks meet,
// with now and then an invalid type, whence, range or pid.
func drawFlock(rt *rapid.T, get bool) unix.Flock_t {
	types := []int16{unix.F_RDLCK, unix.F_WRLCK, unix.F_UNLCK}
	if get {
		types = types[:2]
	}
	lk := unix.Flock_t{
		Type:   rapid.SampledFrom(types).Draw(rt, "type"),
		Whence: int16(rapid.SampledFrom([]int{unix.SEEK_SET, unix.SEEK_SET, unix.SEEK_SET, unix.SEEK_CUR, unix.SEEK_END}).Draw(rt, "whence")),
		Start:  rapid.Int64Range(0, 30).Draw(rt, "start"),
		Len:    rapid.SampledFrom([]int64{0, 1, 2, 3, 4, 5, 8, 13, 20, -1, -3}).Draw(rt, "len"),
	}
	// rapid favours small numbers: the odd cases are the large ones.
	switch rapid.IntRange(0, 40).Draw(rt, "odd") {
	case 40:
		lk.Type = 7
	case 39:
		lk.Whence = 5
	case 38:
		lk.Pid = 1
	case 37:
		lk.Start = 1<<63 - 10
		lk.Len = 20
	case 36:
		lk.Start = 1<<63 - 10
	case 35:
		lk.Start = -3
	case 34:
		lk.Type = unix.F_UNLCK // F_GETLK: EINVAL; F_OFD_GETLK: own locks
	case 33:
		lk.Len = -40
	}
	return lk
}
