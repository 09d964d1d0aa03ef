package shell

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// TestProgramRedirections: a program's descriptors 0, 1 and 2 are its
// redirections, a block's, a here-document, and 2>&1 both ways.
func TestProgramRedirections(t *testing.T) {
	sh, _, out, errb := progShell(t)
	o, e, st := runSh(t, sh, out, errb, "echo hello > /tmp/in\n"+
		"tool upper < /tmp/in > /tmp/out; cat /tmp/out\n"+
		"tool cat /tmp/in >> /tmp/out; cat /tmp/out\n"+
		"tool stderr 'to err' 2> /tmp/err; cat /tmp/err\n"+
		"tool stderr both 2>&1 | tool upper\n"+
		"{ tool args x; tool stderr y; } > /tmp/blk 2>&1; cat /tmp/blk\n"+
		"tool upper <<END\nhere $((2+3))\nEND\n"+
		"tool upper <<< 'here string'\n"+
		"tool cat nope 2>/dev/null; echo $?\n"+
		"tool stderr 'err to out' 2>&1 >/dev/null | wc -c\n"+
		"exec 2>/tmp/err2; tool stderr late; cat /tmp/err2\n")
	want := "HELLO\nHELLO\nhello\nto err\nBOTH\n[x]\ny\nHERE 5\nHERE STRING\n1\n11\nlate\n"
	if o != want || e != "" || st != 0 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr: %s", st, o, want, e)
	}
}

// TestProgramStatus: exit statuses through $?, PIPESTATUS after
// pipelines and single commands, pipefail, !, && and ||, set -e, a
// program writing to a pipe whose reader has gone (141, SIGPIPE's), and
// exec, which ends the shell with the program's status.
func TestProgramStatus(t *testing.T) {
	sh, _, out, errb := progShell(t)
	o, e, st := runSh(t, sh, out, errb, `tool exit 3; echo $?
tool exit 1 | tool exit 2 | tool exit 0; echo "${PIPESTATUS[@]} $?"
tool exit 4; echo "${PIPESTATUS[@]}"
true | tool exit 5 | cat; echo "${PIPESTATUS[@]} $?"
set -o pipefail; tool exit 6 | tool exit 0 | cat; echo $?; set +o pipefail
! tool exit 0; echo $?
tool exit 1 && echo no || echo yes
tool yes | head -c 3 > /dev/null; echo "${PIPESTATUS[@]}"
(set -e; tool exit 9; echo not reached); echo $?
exec tool exit 42
echo not reached`)
	want := "3\n1 2 0 0\n4\n0 5 0 0\n6\n1\nyes\n141 0\n9\n"
	if o != want || e != "" || st != 42 {
		t.Errorf("status %d (want 42)\nstdout:\n%s\nwant:\n%s\nstderr: %s", st, o, want, e)
	}
}

// TestProgramJobs: & starts a job whose $! wait knows, wait without
// operands waits for all, wait -n for the next, jobs lists them, kill
// stops one (128+15), and a job outlives the script that started it.
func TestProgramJobs(t *testing.T) {
	// The shell is interruptible: kill %1 stops "tool spin", a loop that
	// makes no WASI call, only in an interruptible shell (otherwise the
	// kill takes effect only if it comes before the program's start-up
	// calls end, and wait %1 never returns).
	sh, _, out, errb := progShell(t, Options{Interruptible: true})
	o, e, st := runSh(t, sh, out, errb, `tool write /tmp/j1 done & p=$!; wait $p; echo "waited $? $(cat /tmp/j1)"
tool exit 3 & wait $!; echo $?
tool exit 4 & tool exit 5 & wait; echo all $?
tool exit 6 & wait -n; echo next $?
tool spin & jobs; kill %1; wait %1; echo killed $?
tool cat /tmp/j1 | tool upper > /tmp/j2 & wait; cat /tmp/j2; echo
wait 99999; echo $?
tool sleep 300 > /tmp/j3 &`)
	want := "waited 0 done\n3\nall 0\nnext 6\n[1]+  Running                 tool spin &\nkilled 143\nDONE\n127\n"
	if o != want || st != 0 || e != "iovfs sh: line 7: wait: pid 99999 is not a child of this shell\n" {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr: %s", st, o, want, e)
	}
	// The last job still runs after RunScript returned.
	o, _, _ = runSh(t, sh, out, errb, `jobs; wait; jobs; echo end`)
	if o != "[1]+  Running                 tool sleep 300 >/tmp/j3 &\nend\n" {
		t.Errorf("after the script:\n%s", o)
	}
}

// trapModule is a module whose _start executes unreachable.
var trapModule = []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
	1, 4, 1, 0x60, 0, 0, // type section: () -> ()
	3, 2, 1, 0, // function section: func 0 of type 0
	7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 0, // export "_start"
	10, 5, 1, 3, 0, 0x00, 0x0b, // code: unreachable; end
}

// TestProgramTrap: a program that traps ends with 128+SIGABRT and one
// line on standard error, and the shell goes on.
func TestProgramTrap(t *testing.T) {
	sh, p, out, errb := progShell(t)
	install(t, p, "/bin/wtrap", trapModule, 0o755)
	install(t, p, "/bin/ctool", buildC(t, "ctool"), 0o755)
	o, e, st := runSh(t, sh, out, errb, `wtrap; echo $?
echo in | ctool trap | cat; echo ${PIPESTATUS[@]}
echo after`)
	want := "134\n0 134 0\nafter\n"
	wantErr := "iovfs sh: line 1: wtrap: wasm trap: unreachable\niovfs sh: line 2: ctool: wasm trap: unreachable\n"
	if o != want || e != wantErr || st != 0 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", st, o, want, e, wantErr)
	}
}

// TestProgramLookup: what bash does with each kind of file a command
// names: a binary that is not WebAssembly (126), a file that is not
// executable (126), a directory (126), a missing file (127), a script
// without "#!" (run by a new shell, with the exported variables only),
// "#!/bin/sh", "#!" naming a WebAssembly interpreter, and a missing
// interpreter (127); $PATH in order.
func TestProgramLookup(t *testing.T) {
	sh, p, out, errb := progShell(t)
	install(t, p, "/usr/bin/elf", []byte("\x7fELF\x02\x01\x01\x00\x00\x00"), 0o755)
	install(t, p, "/usr/bin/noexec", trapModule, 0o644)
	install(t, p, "/usr/bin/script", []byte("echo \"script $1 $# [$EXP] [$LOC]\"\nexit 7\n"), 0o755)
	install(t, p, "/usr/bin/shebang", []byte("#!/bin/sh\necho shebang \"$@\"\n"), 0o755)
	install(t, p, "/usr/bin/viatool", []byte("#!/bin/tool args\nbody\n"), 0o755)
	install(t, p, "/usr/bin/badinterp", []byte("#!/no/such/interp\n"), 0o755)
	install(t, p, "/usr/bin/tool", []byte("echo shadowed\n"), 0o755)
	o, e, st := runSh(t, sh, out, errb, `PATH=/bin:/usr/bin
elf; echo $?
noexec; echo $?
/usr/bin/noexec; echo $?
/usr; echo $?
./nope; echo $?
export EXP=e; LOC=l; script 'a b' c; echo $?
shebang x 'y z'
viatool q
badinterp; echo $?
tool args first
PATH=/usr/bin:/bin; tool`)
	want := "126\n126\n126\n126\n127\nscript a b 2 [e] []\n7\nshebang x y z\n[/usr/bin/viatool]\n[q]\n127\n[first]\nshadowed\n"
	wantErr := `iovfs sh: line 2: /usr/bin/elf: cannot execute binary file: Exec format error
iovfs sh: line 3: /usr/bin/noexec: Permission denied
iovfs sh: line 4: /usr/bin/noexec: Permission denied
iovfs sh: line 5: /usr: Is a directory
iovfs sh: line 6: ./nope: No such file or directory
iovfs sh: line 10: /usr/bin/badinterp: cannot execute: required file not found
`
	if o != want || e != wantErr || st != 0 {
		t.Errorf("status %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", st, o, want, e, wantErr)
	}
}

// TestProgramInterrupt is Ctrl-C: cancelling the context stops a program
// that computes, one that sleeps, one that waits for input that never
// comes and a pipeline of programs; each gives 130 and the shell goes on.
func TestProgramInterrupt(t *testing.T) {
	sh, _, out, errb := progShell(t, Options{Interruptible: true})
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	runSh(t, sh, out, errb, "tool exit 0") // compiled before the clock starts
	for _, script := range []string{"tool spin", "tool sleep 100000", "tool cat", "tool spin | tool cat | cat"} {
		var in *os.File
		if script == "tool cat" {
			in = pr
		}
		if err := interp.StdIO(in, out, errb)(sh.runner); err != nil {
			t.Fatal(err)
		}
		f, err := sh.Parse(strings.NewReader(script), "")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		done := make(chan int)
		go func() {
			st, _ := sh.Run(ctx, f)
			done <- st
		}()
		select {
		case st := <-done:
			if st != 130 {
				t.Errorf("%s: status %d, want 130 (stderr %q)", script, st, errb.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still running 30 s after the interrupt", script)
		}
		cancel()
	}
	if err := interp.StdIO(nil, out, errb)(sh.runner); err != nil {
		t.Fatal(err)
	}
	if o, e, st := runSh(t, sh, out, errb, "tool args again"); o != "[again]\n" || st != 0 {
		t.Errorf("after the interrupts: status %d, stdout %q, stderr %q", st, o, e)
	}
}

// TestProgramCache: a program is compiled once for the life of the
// shell; a changed file is compiled again and its old code dropped; the
// compiled code is kept in Options.CacheDir across shells.
func TestProgramCache(t *testing.T) {
	sh, p, out, errb := progShell(t)
	count := func() int {
		sh.progs.mu.Lock()
		defer sh.progs.mu.Unlock()
		return len(sh.progs.modules)
	}
	runSh(t, sh, out, errb, "tool exit 0; tool exit 0; /bin/tool exit 0")
	if n := count(); n != 1 {
		t.Errorf("%d compiled modules after three runs of one file", n)
	}
	install(t, p, "/bin/tool2", trapModule, 0o755)
	runSh(t, sh, out, errb, "tool2")
	install(t, p, "/bin/tool2", buildGo(t, "tool"), 0o755)
	if o, _, _ := runSh(t, sh, out, errb, "tool2 args changed"); o != "[changed]\n" || count() != 2 {
		t.Errorf("after the file changed: %q, %d modules", o, count())
	}
	ents, err := os.ReadDir(testCacheDir())
	if err != nil || len(ents) == 0 {
		t.Errorf("nothing in the compilation cache %s: %v", testCacheDir(), err)
	}
}

// TestProgramStream streams 256 MiB (16 MiB under -race or -short)
// through builtin | program | builtin, for a Go and a C program, and
// checks the count and that the Go heap stays bounded: each pipe holds
// 64 KiB and blocks its writer, and a program's memory is mapped outside
// the heap (linmem.go).
func TestProgramStream(t *testing.T) {
	size := 256 << 20
	if raceEnabled || testing.Short() {
		size = 16 << 20
	}
	sh, p, out, errb := progShell(t)
	install(t, p, "/bin/ctool", buildC(t, "ctool"), 0o755)
	for _, prog := range []string{"tool upper", "ctool rot13"} {
		// The baseline: the heap after the same pipeline on a little
		// data, with the program compiled.
		runSh(t, sh, out, errb, "head -c 100000 /dev/zero | "+prog+" | wc -c")
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapInuse
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
		o, e, st := runSh(t, sh, out, errb, "head -c "+strconv.Itoa(size)+" /dev/zero | "+prog+" | wc -c")
		close(stop)
		<-sampled
		if st != 0 || e != "" || strings.TrimSpace(o) != strconv.Itoa(size) {
			t.Fatalf("%s: status %d, stdout %q, stderr %q", prog, st, o, e)
		}
		if pk := peak.Load(); pk > base+32<<20 {
			t.Errorf("%s: heap in use peaked at %d MiB (%d MiB before) while streaming %d MiB", prog, pk>>20, base>>20, size>>20)
		}
		t.Logf("%s: heap in use %d MiB before, %d MiB at most while streaming", prog, base>>20, peak.Load()>>20)
	}
}
