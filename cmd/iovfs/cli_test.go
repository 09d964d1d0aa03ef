package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/testenv"
)

// TestEveryHelp: every command's -h, --help and "iovfs help CMD" print the
// full usage (synopsis, options, examples) on stdout and exit 0.
func TestEveryHelp(t *testing.T) {
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			code, out, errOut := runArgs(args...)
			if code != 0 || errOut != "" {
				t.Errorf("%v: status %d, stderr %q", args, code, errOut)
			}
			for _, w := range []string{"usage: iovfs " + c.name, "\noptions:\n", "\nexamples:\n", "-h, --help"} {
				if !strings.Contains(out, w) {
					t.Errorf("%v: usage lacks %q:\n%s", args, w, out)
				}
			}
			if !strings.HasPrefix(out, "usage: iovfs "+c.name) {
				t.Errorf("%v: stdout does not start with the synopsis:\n%s", args, out)
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, errOut := runArgs(args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: iovfs COMMAND") {
			t.Errorf("%v: status %d, stderr %q\n%s", args, code, errOut, out)
		}
		for _, c := range commands {
			if !strings.Contains(out, "\n  "+c.name+" ") {
				t.Errorf("%v does not list %s", args, c.name)
			}
		}
	}
}

// TestVersion: iovfs --version, -v and version print one line from the
// build information.
func TestVersion(t *testing.T) {
	var first string
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		code, out, errOut := runArgs(args...)
		if code != 0 || errOut != "" || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "iovfs ") {
			t.Errorf("%v: status %d, stdout %q, stderr %q", args, code, out, errOut)
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("%v: %q, want %q as --version", args, out, first)
		}
	}
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-12-03T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got := versionLine(bi, true); !strings.HasPrefix(got, "iovfs v1.2.3 (revision 0123abcd, 2026-12-03T10:00:00Z, modified) go1.26.8 ") {
		t.Errorf("versionLine = %q", got)
	}
	if got := versionLine(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true); !strings.Contains(got, "(devel) (revision unknown") {
		t.Errorf("versionLine without VCS = %q", got)
	}
}

// badInputs are the inputs the bad-input table gives every command. dir
// holds the fixtures made by badInputFixtures.
func badInputs(dir string) []badInput {
	f := func(name string) string { return filepath.Join(dir, name) }
	hostDir := f("hostdir")
	in := []badInput{
		// The command itself.
		{nil, 2, "iovfs: missing command"},
		{[]string{"frob"}, 2, `unknown command "frob"`},
		{[]string{"--frob"}, 2, "unknown option --frob"},
		{[]string{"help", "frob"}, 2, `unknown command "frob"`},
		{[]string{"help", "ls", "cat"}, 2, "one command at a time"},
		{[]string{"version", "x"}, 2, `unexpected argument "x"`},
		{[]string{"version", "--bogus"}, 2, "unknown option --bogus"},

		// bench: numbers, names, formats, files; nothing runs.
		{[]string{"bench", "--loops", "0"}, 2, "--loops 0: must be at least 1"},
		{[]string{"bench", "--loops", "-1"}, 2, "--loops -1: must be at least 1"},
		{[]string{"bench", "--loops", "abc"}, 2, `invalid value "abc" for --loops: not a number`},
		{[]string{"bench", "--loops", "99999999999999999999"}, 2, "out of range"},
		{[]string{"bench", "--loops"}, 2, "option --loops needs an argument"},
		{[]string{"bench", "--reads", "0"}, 2, "--reads 0"},
		{[]string{"bench", "--size", "0"}, 2, "--size 0"},
		{[]string{"bench", "--turns", "-5"}, 2, "--turns -5"},
		{[]string{"bench", "--clock", "bogus"}, 2, `--clock "bogus": want wall or thread`},
		{[]string{"bench", "--format", "csv"}, 2, `--format "csv"`},
		{[]string{"bench", "--markdown", "--format", "benchstat"}, 2, "choose one"},
		{[]string{"bench", "nosuch"}, 2, `no experiment "nosuch"`},
		{[]string{"bench", "--bogus"}, 2, "unknown option --bogus"},
		{[]string{"bench", "-x"}, 2, "unknown option -x"},
		{[]string{"bench", "--full", "zero"}, 2, "--full runs every experiment"},
		{[]string{"bench", "zero", "--drivers", "null"}, 2, "--drivers is an option of matrix"},
		{[]string{"bench", "zero", "--variants", "nosuch"}, 2, `variant "nosuch"`},
		{[]string{"bench", "dax", "--file-size", "0"}, 2, `--file-size "0"`},
		{[]string{"bench", "dax", "--file-size", "abc"}, 2, `--file-size "abc"`},
		{[]string{"bench", "dax", "--file-size", "1023G"}, 2, "MiB free"},
		{[]string{"bench", "dax", "--pattern", "zigzag"}, 2, `--pattern "zigzag"`},
		{[]string{"bench", "walk", "--tree", "deep"}, 2, `--tree "deep"`},
		{[]string{"bench", "walk", "--dirs", "0"}, 2, `--dirs "0"`},
		{[]string{"bench", "walk", "--files", "-3"}, 2, `--files "-3"`},
		{[]string{"bench", "matrix", "--segments", "2000"}, 2, "--segments"},
		{[]string{"bench", "matrix", "--sizes", "0"}, 2, "--sizes"},
		{[]string{"bench", "matrix", "--drivers", "floppy"}, 2, "--drivers"},
		{[]string{"bench", "matrix", "--cell-time", "-1s"}, 2, "--cell-time"},
		{[]string{"bench", "zero", "--json", f("no/such/dir/r.json")}, 1, "--json"},
		{[]string{"bench", "zero", "--json", dir}, 1, "is a directory"},
		{[]string{"bench", "zero", "--plot", f("r.gif")}, 1, ".svg or .png"},

		// mount: usage, then what fails before anything is exported.
		{[]string{"mount"}, 2, "missing -t TYPE"},
		{[]string{"mount", "-t", "nfs", "none", hostDir}, 2, `unknown file system type "nfs"`},
		{[]string{"mount", "-t", "tmpfs"}, 2, "missing operand"},
		{[]string{"mount", "-t", "tmpfs", "none"}, 2, "missing operand"},
		{[]string{"mount", "-t", "tmpfs", "none", hostDir, "x"}, 2, `extra operand "x"`},
		{[]string{"mount", "--bogus"}, 2, "unknown option --bogus"},
		{[]string{"mount", "-t"}, 2, "needs an argument"},
		{[]string{"mount", "-t", "tmpfs", "none", f("missing")}, 1, ""},
		{[]string{"mount", "-t", "tmpfs", "none", f("empty.img")}, 1, ""},
		{[]string{"mount", "-t", "ext4", f("empty.img"), hostDir}, 1, ""},
		{[]string{"mount", "-t", "ext4", "/dev/null", hostDir}, 1, ""},
		{[]string{"mount", "-t", "ext4", dir, hostDir}, 1, ""},
		{[]string{"mount", "-t", "ext4", f("missing.img"), hostDir}, 1, ""},
		{[]string{"mount", "-t", "ext4", f("junk.img"), hostDir}, 1, ""},
		{[]string{"mount", "-t", "ext4", "-o", "data=bogus", f("junk.img"), hostDir}, 1, ""},
		{[]string{"mount", "-t", "tmpfs", "-o", "size=abc", "none", hostDir}, 1, ""},
		{[]string{"mount", "-t", "tmpfs", "-o", "size=100P", "none", hostDir}, 1, ""},
		{[]string{"mount", "-t", "hostfs", f("missing"), hostDir}, 1, ""},
		{[]string{"mount", "-t", "overlay", "none", hostDir}, 1, "missing lowerdir"},
		{[]string{"mount", "-t", "overlay", "-o", "lowerdir=" + f("missing"), "none", hostDir}, 1, "missing: No such file or directory"},
		{[]string{"mount", "-t", "overlay", "-o", "lowerdir=" + hostDir, "none", hostDir}, 1, "at least 2 lowerdir"},
		{[]string{"mount", "-t", "overlay", "-o", "lowerdir=" + hostDir + ",upperdir=" + hostDir, "none", hostDir}, 1, "upperdir and workdir go together"},
		{[]string{"mount", "-t", "overlay", "-o", "lowerdir=" + hostDir + ",upperdir=" + f("missing") + ",workdir=" + hostDir, "none", hostDir}, 1, "upperdir " + f("missing")},
		{[]string{"mount", "-t", "overlay", "-o", "lowerdir=" + hostDir + ",redirect_dir=on", "none", hostDir}, 1, "redirect_dir=on"},
		{[]string{"mount", "-t", "overlay", "-o", "lowerdir=" + hostDir + ",bogus", "none", hostDir}, 1, `"bogus"`},
		{[]string{"mount", "-t", "overlay", "-o", "lowerdir=" + f("junk.img") + ":" + hostDir, "none", hostDir}, 1, "junk.img: no ext2/3/4 or FAT file system found"},
		{[]string{"mount", "-t", "overlay", "-o", "lowerdir=" + f("empty.img") + ":" + hostDir, "none", hostDir}, 1, "empty file"},
		{[]string{"mount", "-t", "overlay", "-o", "lowerdir=" + f("ok.img") + "@1:" + hostDir, "none", hostDir}, 1, "no partition table"},
		{[]string{"mount", "-t", "overlay", "-o", "lowerdir=" + f("missing.img") + "@1:" + hostDir, "none", hostDir}, 1, "missing.img@1: No such file or directory"},

		// run: usage, the program, the preopens.
		{[]string{"run"}, 2, "missing PROG.wasm"},
		{[]string{"run", "--bogus"}, 2, "unknown option --bogus"},
		{[]string{"run", "--tmpfs"}, 2, "option --tmpfs needs an argument"},
		{[]string{"run", "--env", "NOEQUALS", f("trap.wasm")}, 2, "want NAME=VALUE"},
		{[]string{"run", "--cachedir=", f("trap.wasm")}, 2, "--cachedir needs a directory"},
		{[]string{"run", f("missing.wasm")}, 1, "missing.wasm: No such file or directory"},
		{[]string{"run", dir}, 1, "is a directory"},
		{[]string{"run", f("empty.img")}, 1, "not a WebAssembly module"},
		{[]string{"run", f("junk.img")}, 1, "not a WebAssembly module"},
		{[]string{"run", "/dev/null"}, 1, "not a WebAssembly module"},
		{[]string{"run", "--tmpfs", "/t:size=abc", f("trap.wasm")}, 1, `bad option "size=abc"`},
		{[]string{"run", "--tmpfs", "/t:size=100P", f("trap.wasm")}, 1, "more than the"},
		{[]string{"run", "--tmpfs", "/t:bogus", f("trap.wasm")}, 1, `bad option "bogus"`},
		{[]string{"run", "--tmpfs", "rel", f("trap.wasm")}, 1, "not absolute"},
		{[]string{"run", "--tmpfs", "/a", "--tmpfs", "/a", f("trap.wasm")}, 1, "/a is already given by --tmpfs /a"},
		{[]string{"run", "--mount", hostDir + ":/", "--tmpfs", "/none/x", f("trap.wasm")}, 1, "has no directory /none/x"},
		{[]string{"run", "--mount", f("missing") + ":/x", f("trap.wasm")}, 1, "No such file or directory"},
		{[]string{"run", "--mount", f("empty.img") + ":/x", f("trap.wasm")}, 1, "not a directory"},
		{[]string{"run", "--mount", ":/x", f("trap.wasm")}, 1, "want HOSTDIR"},
		{[]string{"run", "--image", f("empty.img") + ":/x", f("trap.wasm")}, 1, "empty file"},
		{[]string{"run", "--image", "/dev/null:/x", f("trap.wasm")}, 1, "character device"},
		{[]string{"run", "--image", f("junk.img") + ":/x", f("trap.wasm")}, 1, "no ext2/3/4 or FAT file system found"},
		{[]string{"run", "--image", f("missing.img") + ":/x", f("trap.wasm")}, 1, "No such file"},
		{[]string{"run", "--image", f("ok.img"), f("trap.wasm")}, 1, "want IMAGE:GUESTPATH"},
		{[]string{"run", "--overlay", f("trap.wasm")}, 2, "--overlay and --overlay-dir apply to an --image: none given"},
		{[]string{"run", "--overlay-dir", hostDir, f("trap.wasm")}, 2, "none given"},
		{[]string{"run", "--overlay-dir=", "--image", f("ok.img") + ":/", f("trap.wasm")}, 2, "--overlay-dir needs a host directory"},
		{[]string{"run", "--overlay-dir", hostDir, "--image", f("ok.img") + ":/a", "--image", f("ok.img") + ":/b", f("trap.wasm")}, 2, "one --image: 2 given"},
		{[]string{"run", "--overlay", "--image", f("junk.img") + ":/", f("trap.wasm")}, 1, "no ext2/3/4 or FAT file system found"},
		{[]string{"run", "--overlay-dir", f("empty.img"), "--image", f("ok.img") + ":/", f("trap.wasm")}, 1, "Not a directory"},

		// sh: its options, then builtins given bad sizes.
		{[]string{"sh", "--bogus"}, 2, "unknown option --bogus"},
		{[]string{"sh", "-c"}, 2, "option -c needs an argument"},
		{[]string{"sh", "--user", "abc"}, 2, "--user abc"},
		{[]string{"sh", "--user", "99999999999"}, 2, "--user 99999999999"},
		{[]string{"sh", "--mount", "bad"}, 2, "want TYPE:SOURCE:TARGET"},
		{[]string{"sh", "--image"}, 2, "option --image needs an argument"},
		{[]string{"sh", "--image", f("empty.img"), "-c", "true"}, 1, "empty file"},
		{[]string{"sh", "--image", "/dev/null", "-c", "true"}, 1, "character device"},
		{[]string{"sh", "--image", dir, "-c", "true"}, 1, "is a directory"},
		{[]string{"sh", "--image", f("junk.img"), "-c", "true"}, 1, "no ext2/3/4 or FAT file system found"},
		{[]string{"sh", "--overlay", "-c", "true"}, 2, "--overlay and --overlay-dir apply to an --image: none given"},
		{[]string{"sh", "--overlay=x", "--image", f("ok.img"), "-c", "true"}, 2, "--overlay takes no argument"},
		{[]string{"sh", "--overlay-dir"}, 2, "option --overlay-dir needs an argument"},
		{[]string{"sh", "--overlay-dir=", "--image", f("ok.img"), "-c", "true"}, 2, "--overlay-dir needs a host directory"},
		{[]string{"sh", "--overlay-dir", hostDir, "--image", f("ok.img"), "--image", f("ok.img") + ":/b", "-c", "true"}, 2, "one --image: 2 given"},
		{[]string{"sh", "--overlay", "--image", f("ok.img") + ":/x:rw", "-c", "true"}, 2, "the image stays read-only"},
		{[]string{"sh", "--overlay", "--image", f("junk.img") + ":/", "-c", "true"}, 1, "no ext2/3/4 or FAT file system found"},
		{[]string{"sh", "--overlay", "--image", f("junk.img"), "-c", "true"}, 1, "no ext2/3/4 or FAT file system found"},
		{[]string{"sh", "--overlay-dir", f("empty.img"), "--image", f("ok.img") + ":/", "-c", "true"}, 1, "Not a directory"},
		{[]string{"sh", "--mount", "tmpfs:none:/x:size=abc", "-c", "true"}, 1, `bad option "size=abc"`},
		{[]string{"sh", "--mount", "tmpfs:none:/x:size=100P", "-c", "true"}, 1, "more than the"},
		{[]string{"sh", "--mount", "nfs:none:/x", "-c", "true"}, 1, "--mount nfs:none:/x"},
		{[]string{"sh", f("missing.sh")}, 127, "No such file or directory"},
		{[]string{"sh", dir}, 126, "Is a directory"},
		{[]string{"sh", "-c", "nosuchcommand"}, 127, "nosuchcommand: command not found"},
		{[]string{"sh", "-c", "mkrd 99999999999999"}, 1, "Cannot allocate memory"},
		{[]string{"sh", "-c", "mkrd 99999999999999; head -c1 /dev/ram1"}, 1, ""},
		{[]string{"sh", "-c", "mkrd 99999999999999999999"}, 1, "File too large"},
		{[]string{"sh", "-c", "mkrd -s 100000000000 8"}, 1, "invalid sector size"},
		{[]string{"sh", "-c", "mkrd -s 3 8"}, 1, "invalid sector size"},
		{[]string{"sh", "-c", "mkrd 0"}, 1, "invalid sector count"},
		{[]string{"sh", "-c", "mkrd -- -8"}, 1, "invalid sector count"},
		{[]string{"sh", "-c", "mkrd -m -1 8"}, 1, "invalid minor"},
		{[]string{"sh", "-c", "mkrd"}, 1, "mkrd: missing operand"},
		{[]string{"sh", "-c", "dd if=/dev/zero of=/dev/null bs=100G count=1"}, 1, "memory exhausted by input buffer"},
		{[]string{"sh", "-c", "dd if=/dev/zero of=/dev/null bs=0"}, 1, "invalid number"},
		{[]string{"sh", "-c", "dd if=/dev/zero of=/dev/null bs=99999999999999999999"}, 1, "invalid number"},
		{[]string{"sh", "-c", "dd if=/dev/zero of=/dev/null ibs=9999999T count=1"}, 1, "invalid number"},
		{[]string{"sh", "-c", "dd if=/dev/zero of=/tmp/x bs=4096 seek=9223372036854775807"}, 1, "offset overflow"},
		{[]string{"sh", "-c", "dd if=/dev/zero of=/dev/null count=-1"}, 1, "invalid number"},
		{[]string{"sh", "-c", "mount -t tmpfs -o size=abc none /mnt"}, 32, `bad option "size=abc"`},
		{[]string{"sh", "-c", "mount -t tmpfs -o size=100P none /mnt"}, 32, "more than the"},
		{[]string{"sh", "-c", "truncate -s 99999999999T /tmp/x"}, 1, "Invalid number"},
		{[]string{"sh", "-c", "head -c 99999999999999999999 /dev/zero"}, 1, ""},
		{[]string{"sh", "-c", "cat /nonexistent"}, 1, "No such file or directory"},
	}
	// The image tools, each with the same bad inputs.
	for _, tool := range []string{"ls", "cat", "stat", "tree"} {
		in = append(in,
			badInput{[]string{tool}, 2, "missing"},
			badInput{[]string{tool, "--bogus", f("ok.img") + ":/f"}, 2, "unknown option --bogus"},
			badInput{[]string{tool, "-Z", f("ok.img") + ":/f"}, 2, "invalid option -- 'Z'"},
			badInput{[]string{tool, f("missing.img") + ":/f"}, 1, "missing.img:/f: No such file or directory"},
			badInput{[]string{tool, f("empty.img")}, 1, "empty.img: empty file, not a disk image"},
			badInput{[]string{tool, f("junk.img") + ":/f"}, 1, "junk.img: no ext2/3/4 or FAT file system found"},
			badInput{[]string{tool, dir}, 1, ": is a directory, not an image file"},
			badInput{[]string{tool, "/dev/null"}, 1, "/dev/null: is a character device"},
			badInput{[]string{tool, f("ok.img") + ":/nosuch"}, 1, "ok.img:/nosuch: No such file or directory"},
			badInput{[]string{tool, f("ok.img") + "@1:/f"}, 1, "no partition table"},
			badInput{[]string{tool, f("ok.img") + ":/f", "extra"}, 2, `extra operand "extra"`},
		)
	}
	in = append(in,
		badInput{[]string{"cat", f("ok.img")}, 2, "names no file inside the image"},
		badInput{[]string{"cat", f("ok.img") + ":/d"}, 1, "ok.img:/d: Is a directory"},

		// cp, as GNU cp, between the host and images.
		badInput{[]string{"cp"}, 2, "missing file operand"},
		badInput{[]string{"cp", f("ok.img") + ":/f"}, 2, "missing destination file operand"},
		badInput{[]string{"cp", "--bogus", "a", "b"}, 2, "--bogus"},
		badInput{[]string{"cp", "-Z", "a", "b"}, 2, "invalid option -- 'Z'"},
		badInput{[]string{"cp", "--owner", "x", "a", "b"}, 2, "invalid owner"},
		badInput{[]string{"cp", "--mode", "99", "a", "b"}, 2, "invalid mode"},
		badInput{[]string{"cp", "--mode"}, 2, "requires an argument"},
		badInput{[]string{"cp", f("ok.img") + ":/nosuch", f("out")}, 1, "No such file or directory"},
		badInput{[]string{"cp", f("ok.img") + ":/d", f("out")}, 1, "-r not specified; omitting directory"},
		badInput{[]string{"cp", f("ok.img") + ":/f", f("no/such/dir/f")}, 1, "No such file or directory"},
		badInput{[]string{"cp", f("junk.img") + ":/f", f("out")}, 1, "no ext2/3/4 or FAT file system found"},
		badInput{[]string{"cp", f("missing"), f("out")}, 1, "No such file or directory"},

		// parts.
		badInput{[]string{"parts"}, 2, "expected one operand IMAGE"},
		badInput{[]string{"parts", "-x", f("ok.img")}, 2, "invalid option"},
		badInput{[]string{"parts", f("missing.img")}, 1, "No such file or directory"},
		badInput{[]string{"parts", dir}, 1, "is a directory"},
		badInput{[]string{"parts", "/dev/null"}, 1, "character device"},
		badInput{[]string{"parts", f("empty.img")}, 1, "empty file"},

		// The editing commands.
		badInput{[]string{"mkdir"}, 2, "missing operand"},
		badInput{[]string{"mkdir", "-x", f("ok.img") + ":/n"}, 2, "invalid option -- 'x'"},
		badInput{[]string{"mkdir", "nodisk:/n"}, 2, "is not IMAGE[@PART]:PATH"},
		badInput{[]string{"mkdir", f("junk.img") + ":/n"}, 1, "no ext2/3/4 or FAT file system found"},
		badInput{[]string{"mkdir", f("empty.img") + ":/n"}, 1, "empty file"},
		badInput{[]string{"mkdir", "/dev/null:/n"}, 1, "character device"},
		badInput{[]string{"rm"}, 2, "missing operand"},
		badInput{[]string{"rm", f("ok.img") + ":/nosuch"}, 1, "No such file or directory"},
		badInput{[]string{"mv", f("ok.img") + ":/f"}, 2, "missing operand"},
		badInput{[]string{"ln", "-s", "t"}, 2, "missing operand"},
		badInput{[]string{"chmod", "755"}, 2, "missing operand"},
		badInput{[]string{"chmod", "abc", f("ok.img") + ":/f"}, 2, "invalid mode"},
		badInput{[]string{"chown", "x:y", f("ok.img") + ":/f"}, 2, "invalid owner"},
		badInput{[]string{"touch"}, 2, "missing operand"},
	)
	return in
}

type badInput struct {
	args []string
	code int
	want string // in the message; "" for any
}

// badInputFixtures makes the files the bad inputs name: an empty file,
// 1 MiB of bytes that are no file system, a small ext4 image with /f
// and /d, a host directory, a wasm module that traps.
func badInputFixtures(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "empty.img"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "junk.img"), bytes.Repeat([]byte{0xa5, 0x5a, 0x17}, 1<<18), 0o644)
	os.Mkdir(filepath.Join(dir, "hostdir"), 0o755)
	os.WriteFile(filepath.Join(dir, "trap.wasm"), trapWasm, 0o644)
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "f"), []byte("f\n"), 0o644)
	img := filepath.Join(dir, "ok.img")
	mkfsExt4(t, img, "4M", "-d", src)
	return dir
}

// trapWasm is a module whose _start runs "unreachable".
var trapWasm = []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
	1, 4, 1, 0x60, 0, 0, // type () -> ()
	3, 2, 1, 0, // one function
	7, 10, 1, 6, '_', 's', 't', 'a', 'r', 't', 0, 0, // export _start
	10, 5, 1, 3, 0, 0, 0x0b, // body: unreachable
}

// TestBadInputs runs every command with bad input: the exit status (2
// for a usage error, 1 for a failure, the shell's own for its builtins),
// a one-line message prefixed with the command (and "Try 'iovfs CMD
// --help'." after a usage error), nothing on stdout, no stack trace, and
// no name the user did not give (a loop device, an ioctl, a mount point
// inside the process).
func TestBadInputs(t *testing.T) {
	testenv.RequireTool(t, "mke2fs")
	dir := badInputFixtures(t)
	cases := badInputs(dir)
	t.Logf("%d bad inputs", len(cases))
	for _, c := range cases {
		code, out, errOut := runArgs(c.args...)
		name := strings.Join(c.args, " ")
		if testing.Verbose() {
			t.Logf("iovfs %s\n%d %s", strings.ReplaceAll(name, dir, "DIR"), code, strings.ReplaceAll(errOut, dir, "DIR"))
		}
		if code != c.code {
			t.Errorf("iovfs %s: status %d, want %d; stderr %q", name, code, c.code, errOut)
		}
		if out != "" && !(len(c.args) > 0 && c.args[0] == "sh") {
			t.Errorf("iovfs %s: stdout %q, want nothing", name, out)
		}
		checkMessage(t, name, c.args, code, errOut, c.want)
	}
}

// checkMessage checks the stderr of a failed iovfs command.
func checkMessage(t *testing.T, name string, args []string, code int, errOut, want string) {
	t.Helper()
	for _, bad := range []string{"goroutine ", "panic", "runtime error", "fatal error", "/dev/loop", "LOOP_", "/mnt/img", "/run/wasi", "ioctl"} {
		if strings.Contains(errOut, bad) {
			t.Errorf("iovfs %s: stderr shows %q:\n%s", name, bad, errOut)
		}
	}
	if want != "" && !strings.Contains(errOut, want) {
		t.Errorf("iovfs %s: stderr %q lacks %q", name, errOut, want)
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	cmd := ""
	if len(args) > 0 {
		if _, ok := commandByName(args[0]); ok {
			cmd = args[0]
		}
	}
	prefix := strings.TrimSpace("iovfs " + cmd)
	switch {
	case errOut == "" || !strings.HasSuffix(errOut, "\n"):
		t.Errorf("iovfs %s: stderr %q: want a message ending in a newline", name, errOut)
	case len(args) > 0 && args[0] == "sh" && code != 2 && !strings.HasPrefix(lines[0], prefix):
		// The builtins' own messages, one line each, as coreutils print
		// them: "mkrd: ...".
		for _, l := range lines {
			if strings.HasPrefix(l, "Try '") && strings.HasSuffix(l, " --help' for more information.") {
				continue // coreutils' line after a usage error
			}
			if name, _, ok := strings.Cut(l, ": "); !ok || strings.ContainsAny(name, " /") {
				t.Errorf("iovfs %s: %q is not a builtin's message", name, l)
			}
		}
	case code == 2:
		if len(lines) != 2 || !strings.HasPrefix(lines[0], prefix+": ") || lines[1] != "Try '"+prefix+" --help'." {
			t.Errorf("iovfs %s: usage error %q: want %q and the Try line", name, errOut, prefix+": ...")
		}
	default:
		if len(lines) != 1 || !strings.HasPrefix(lines[0], prefix+": ") {
			t.Errorf("iovfs %s: failure %q: want one line starting %q", name, errOut, prefix+": ")
		}
	}
}

// commandByName finds a subcommand.
func commandByName(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// TestRunTrap: a trap is reported as one, with the wasm stack after it.
func TestRunTrap(t *testing.T) {
	trap := filepath.Join(t.TempDir(), "trap.wasm")
	os.WriteFile(trap, trapWasm, 0o644)
	code, out, errOut := runArgs("run", trap)
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != 1 || out != "" || len(lines) < 3 || lines[0] != "iovfs run: "+trap+": wasm trap: unreachable" || lines[1] != "wasm stack trace:" {
		t.Errorf("status %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
}

// TestRunNoCache: iovfs run writes no compilation cache unless --cachedir
// names one, whatever HOME and XDG_CACHE_HOME say.
func TestRunNoCache(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	prog := filepath.Join(t.TempDir(), "trap.wasm")
	os.WriteFile(prog, trapWasm, 0o644)
	runArgs("run", prog)
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Errorf("iovfs run wrote %v into HOME", ents)
	}
	cache := filepath.Join(t.TempDir(), "c")
	runArgs("run", "--cachedir", cache, prog)
	if ents, err := os.ReadDir(cache); err != nil || len(ents) == 0 {
		t.Errorf("--cachedir %s: %v, %d entries", cache, err, len(ents))
	}
}

// mkfsExt4 makes an ext4 image at img of size (mke2fs's notation), with
// mke2fs's other options opts.
func mkfsExt4(t *testing.T, img, size string, opts ...string) {
	t.Helper()
	args := append(append([]string{"-q", "-F", "-t", "ext4"}, opts...), img, size)
	if out, err := exec.Command("mke2fs", args...).CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
}
