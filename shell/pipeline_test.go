package shell

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iovfs/iovfs"
)

// TestPipelineLargeData streams data through a pipeline of four builtins
// and checks the count and that memory stays bounded: each iovfs pipe
// holds 64 KiB, so a writer blocks until its reader catches up
// (back-pressure). Without it the heap would grow by the data size.
func TestPipelineLargeData(t *testing.T) {
	size := 256 << 20
	if raceEnabled || testing.Short() {
		size = 16 << 20
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	out, errs, st := run(t, "head -c "+strconv.Itoa(size)+" /dev/zero | cat | cat - | wc -c")
	close(stop)
	<-sampled
	if st != 0 || errs != "" {
		t.Fatalf("status %d, stderr %q", st, errs)
	}
	if got := strings.TrimSpace(out); got != strconv.Itoa(size) {
		t.Fatalf("wc -c = %q, want %d", got, size)
	}
	if p := peak.Load(); p > 48<<20 {
		t.Errorf("heap in use peaked at %d MiB while streaming %d MiB: the pipeline buffers instead of blocking", p>>20, size>>20)
	}
}

// TestPipelineConcurrent needs the sides to run at once: an endless
// writer ends only when its reader has taken what it wants and gone
// (EPIPE). A pipeline run side after side would never finish.
func TestPipelineConcurrent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	sh, err := New(p, Options{Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	st := sh.RunScript(ctx, strings.NewReader("cat /dev/zero | cat | head -c 100000 | wc -c"), "")
	if ctx.Err() != nil {
		t.Fatal("pipeline did not finish: its sides do not run concurrently")
	}
	if st != 0 || out.String() != "100000\n" {
		t.Fatalf("status %d, stdout %q, stderr %q", st, out.String(), errb.String())
	}
}

// TestPipelineCancel is Ctrl-C: cancelling the context stops an endless
// pipeline, which then reports 130.
func TestPipelineCancel(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	sh, err := New(p, Options{Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	f, err := sh.Parse(strings.NewReader("cat /dev/zero | wc -c"), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	done := make(chan int)
	go func() {
		st, _ := sh.Run(ctx, f)
		done <- st
	}()
	select {
	case st := <-done:
		if st != 130 {
			t.Errorf("status %d, want 130", st)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("cancelled pipeline still running")
	}
	// The shell keeps working after an interrupted command.
	f, _ = sh.Parse(strings.NewReader("echo again | cat"), "")
	out.Reset()
	if st, _ := sh.Run(context.Background(), f); st != 0 || out.String() != "again\n" {
		t.Errorf("after cancel: status %d, stdout %q", st, out.String())
	}
}

// TestPipelineProcesses checks that each side runs in its own process:
// a cd or a umask in one side changes neither the other sides nor the
// shell, and descriptors opened by a side are closed when it ends.
func TestPipelineProcesses(t *testing.T) {
	out, errs, st := run(t, `mkdir /tmp/d; cd /tmp/d | pwd; pwd; umask 077 | touch /tmp/f; stat /tmp/f | head -4 | tail -1 | cat`)
	if st != 0 {
		t.Fatalf("status %d, stderr %q", st, errs)
	}
	want := "/\n/\n"
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "Access: (0644/-rw-r--r--)") {
		t.Fatalf("stdout %q", out)
	}
	// Every descriptor a pipeline made is closed again: the shell's
	// process holds 0, 1 and 2 only.
	p, _ := iovfs.New()
	var o, e bytes.Buffer
	sh, _ := New(p, Options{Stdout: &o, Stderr: &e})
	sh.RunScript(context.Background(), strings.NewReader("echo a | cat | cat > /tmp/x; cat /tmp/x | wc -c"), "")
	for fd := 3; fd < 32; fd++ {
		if _, err := p.Fstat(fd); err == nil {
			t.Errorf("descriptor %d still open after the pipelines", fd)
		}
	}
	if o.String() != "2\n" {
		t.Errorf("stdout %q", o.String())
	}
}

func TestCommandNotFound(t *testing.T) {
	out, errs, st := run(t, "nosuchcmd a b")
	if st != 127 || out != "" || errs != "iovfs sh: line 1: nosuchcmd: command not found\n" {
		t.Fatalf("status %d, stdout %q, stderr %q", st, out, errs)
	}
	_, errs, st = run(t, "/bin/ls /")
	if st != 127 || errs != "iovfs sh: line 1: /bin/ls: No such file or directory\n" {
		t.Fatalf("host program: status %d, stderr %q", st, errs)
	}
}

// TestPipelineBackground runs pipelines under "&" (left to the
// interpreter's own pipes, see rewrite) next to rewritten ones; under
// -race this would catch a pipeline copying a runner that is running.
func TestPipelineBackground(t *testing.T) {
	out, errs, st := run(t, `x=0; { echo bg | cat > /tmp/bg; } & for i in 1 2 3; do x=$((x+i)); echo $x | cat > /dev/null; done; wait; cat /tmp/bg; echo $x`)
	if st != 0 || out != "bg\n6\n" {
		t.Fatalf("status %d, stdout %q, stderr %q", st, out, errs)
	}
}

func TestPipelineInSubshell(t *testing.T) {
	out, errs, st := run(t, `mkdir -p /tmp/d/e; touch /tmp/d/f; (cd /tmp/d && ls | wc -l); n=$(cd /tmp/d/e; pwd | cat); echo $n; pwd`)
	if st != 0 || out != "2\n/tmp/d/e\n/\n" {
		t.Fatalf("status %d, stdout %q, stderr %q", st, out, errs)
	}
}

// TestPipelineSubshellVars: a pipeline inside ( ) or $( ) sees the
// variables that subshell set, exported ones exported.
func TestPipelineSubshellVars(t *testing.T) {
	out, errs, st := run(t, `(x=5; echo $x | cat); y=$(z="a 'b' \$c"; echo "$z" | cat); echo "$y"; (export E=1; N=2; env | cat > /tmp/env; echo $E | cat); cat /tmp/env; f() { local q=3; echo $q | cat; }; f; echo "[$x][$z]"`)
	if st != 0 || !strings.HasPrefix(out, "5\na 'b' $c\n1\n") || !strings.HasSuffix(out, "\n3\n[][]\n") ||
		!strings.Contains(out, "\nE=1\n") || strings.Contains(out, "N=2") {
		t.Fatalf("status %d, stdout %q, stderr %q", st, out, errs)
	}
}
