package shell

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs"
	"golang.org/x/sys/unix"
)

// fuzzSkipped are the builtins FuzzBuiltinArgs leaves out: bench runs
// benchmarks for minutes, and mount could bring a host directory into
// the namespace (hostfs), where the other builtins would then change the
// machine's own files.
var fuzzSkipped = map[string]bool{"bench": true, "mount": true}

// FuzzBuiltinArgs runs a builtin with arbitrary arguments (NUL-separated:
// the builtin's name, then its arguments) on a namespace of its own with
// a few files: whatever the arguments, the builtin returns a status and,
// on stderr, messages, never a panic or a runtime error. Output is cut at
// 1 MiB and the run at 1 s (cat /dev/zero is valid input).
func FuzzBuiltinArgs(f *testing.F) {
	for _, s := range [][]string{
		{"ls", "-laR", "/"}, {"ls", "--bogus"}, {"ls", "-"},
		{"dd", "if=/dev/zero", "of=/tmp/x", "bs=100G", "count=1"}, {"dd", "bs=0"}, {"dd", "if=/dev/zero", "of=/dev/null", "bs=1", "seek=9223372036854775807"},
		{"dd", "if=/dev/zero", "of=/dev/null", "skip=99999999999999999999"}, {"dd", "conv=bogus"}, {"dd", "status=x"},
		{"mkrd", "99999999999999"}, {"mkrd", "-s", "3", "8"}, {"mkrd", "-m"},
		{"head", "-c", "99999999999999999999", "/dev/zero"}, {"head", "-n", "-5", "/tmp/f"}, {"tail", "-c", "+0", "/tmp/f"},
		{"truncate", "-s", "9999999999999T", "/tmp/f"}, {"truncate", "-s", "<-1", "/tmp/f"},
		{"chmod", "u+rwx,g=", "/tmp/f"}, {"chmod", "9999", "/tmp/f"}, {"chown", "99999999999:x", "/tmp/f"},
		{"find", "/", "-maxdepth", "-1"}, {"find", "/", "-type"}, {"cp", "-r", "/tmp", "/tmp/d/x"},
		{"ln", "-s", "", ""}, {"stat", "-L", "/dev/null"}, {"losetup", "-f", "--show", "/tmp/f"},
		{"losetup", "-o", "-1", "/dev/loop0", "/tmp/f"}, {"hexdump", "-C", "/tmp/f"}, {"xxd", "/dev/zero"},
		{"wc", "-lwc", "/tmp/f"}, {"df", "-h"}, {"du", "-sh", "/"}, {"touch", "-d", "@-99999999999999", "/tmp/f"},
		{"readlink", "-f", "/tmp/../../.."}, {"umount", "-l", "/tmp"}, {"rm", "-rf", "/"}, {"mkdir", "-p", "-m", "9", "/a/b"},
		{"mkfifo", "-m", "x", "/tmp/p"}, {"id", "-u", "nobody"}, {"env", "x"}, {"help", "nosuch"},
		{"seq", "-w", "-f", "%g", "1", "1e-300", "2"}, {"seq", "9223372036854775806", "9223372036854775807"},
		{"sort", "-k", "2.5,1b", "-t", ":", "-nru", "/tmp/f"}, {"uniq", "-cdu", "/tmp/f", "/tmp/o"},
		{"cut", "-f", "1-,3", "--complement", "-s", "/tmp/f"}, {"tr", "-cds", "[:alpha:][=a=]", "[x*]"},
		{"tr", "a-z", "[\\0*0]"}, {"tee", "-a", "/tmp/f", "/tmp/d"}, {"basename", "-s", "", "/"},
		{"stat", "-c", "%%%-9.3Y%N%q%", "/tmp/f"}, {"stat", "--printf", "\\x\\777\\", "/tmp"},
		{"xxd", "-r", "-s", "-9", "-c", "999", "/tmp/f"}, {"xxd", "-g", "3", "-c", "7", "-s", "-99", "/tmp/f"},
		{"hexdump", "-n", "0xffffffffffffffff", "-s", "1E", "/tmp/f"},
		{"grep", "-rwo", "-e", "\\(", "-e", "a\\{1,\\}", "/"}, {"grep", "-E", "x{99999}", "/tmp/f"},
		{"sed", "-n", "-e", "1~0{/x/I,+2!s/./&\\n/3gp;y/ab/cd/}", "/tmp/f"}, {"sed", "-i.bak", "$q7", "/tmp/f"},
		{"sed", "s/x*//g;n;n;=", "/tmp/f"}, {"xargs", "-0", "-n", "1", "rm"}, {"xargs", "-I", "", "ls"},
		{"printf", "%*.*d%q%b%c%-#x\\u12", "-5", "99999999999", "1", "", "\\c"},
	} {
		f.Add([]byte(strings.Join(s, "\x00")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args := strings.Split(string(data), "\x00")
		if builtins[args[0]] == nil || fuzzSkipped[args[0]] {
			return
		}
		p, err := iovfs.New()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct{ path, data string }{{"/tmp/f", "hello\nworld\n"}, {"/tmp/d/g", "g"}} {
			p.Mkdir("/tmp/d", 0o755)
			if f, err := p.OpenFile(w.path, unix.O_WRONLY|unix.O_CREAT, 0o644); err == nil {
				f.Write([]byte(w.data))
				f.Close()
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var errOut bytes.Buffer
		out := &cappedWriter{left: 1 << 20}
		status := RunCommand(ctx, p, "/", args, strings.NewReader("input\n"), out, &errOut)
		if status < 0 || status > 255 {
			t.Errorf("%q: status %d", args, status)
		}
		for _, bad := range []string{"panic", "goroutine ", "runtime error"} {
			if strings.Contains(errOut.String(), bad) {
				t.Errorf("%q: stderr shows %q:\n%s", args, bad, errOut.String())
			}
		}
		p.Unmount("/tmp", unix.MNT_DETACH)
	})
}

// cappedWriter takes n bytes, then fails as a closed pipe does.
type cappedWriter struct{ left int }

var errCapped = errors.New("output capped")

func (w *cappedWriter) Write(b []byte) (int, error) {
	if len(b) > w.left {
		n := w.left
		w.left = 0
		return n, errCapped
	}
	w.left -= len(b)
	return len(b), nil
}
