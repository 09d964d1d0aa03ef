package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
)

// stopCase is one way of ending "iovfs mount".
type stopCase struct {
	name string
	stop func(t *testing.T, c *exec.Cmd, mnt string)
}

var stops = []stopCase{
	{"SIGTERM", func(t *testing.T, c *exec.Cmd, _ string) { c.Process.Signal(syscall.SIGTERM) }},
	{"SIGINT", func(t *testing.T, c *exec.Cmd, _ string) { c.Process.Signal(syscall.SIGINT) }},
	{"umount", func(t *testing.T, _ *exec.Cmd, mnt string) {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, out)
		}
	}},
}

// shIn runs a shell command line in dir (the shell changes there
// itself) and fails the test with its output if it fails.
func shIn(t *testing.T, dir, cmdline string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", `cd "$0" && `+cmdline, dir)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, out)
	}
}

// stopAndCheck ends the mount with stop and checks that the command
// exits 0 and, for an image, that it is clean (no journal to replay,
// e2fsck -fn) and that the kernel sees what check wants.
func stopAndCheck(t *testing.T, c *exec.Cmd, out func() string, stop stopCase, mnt, img string, check func(kmnt string)) {
	t.Helper()
	stop.stop(t, c, mnt)
	output := out()
	if err := c.Wait(); err != nil {
		t.Fatalf("iovfs mount after %s: %v\n%s", stop.name, err, output)
	}
	if mounted(mnt) {
		t.Errorf("%s still mounted", mnt)
	}
	if img == "" {
		return
	}
	if b, _ := exec.Command("dumpe2fs", "-h", img).CombinedOutput(); bytes.Contains(b, []byte("needs_recovery")) {
		t.Errorf("the image needs recovery after %s:\n%s", stop.name, b)
	}
	if b, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
		t.Errorf("e2fsck -fn after %s: %v\n%s", stop.name, err, b)
	}
	kmnt := filepath.Join(t.TempDir(), "kernel")
	os.Mkdir(kmnt, 0o755)
	if b, err := testenv.Mount("-o", "loop,ro,noload", img, kmnt); err != nil {
		t.Fatalf("kernel mount: %v\n%s", err, b)
	}
	defer exec.Command("umount", kmnt).Run()
	check(kmnt)
}

// newExport makes what "iovfs mount -t typ" exports: nothing for tmpfs,
// a fresh image for ext4. It returns the image and the mountpoint.
func newExport(t *testing.T, typ string) (img, mnt string) {
	dir := t.TempDir()
	mnt = filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	if typ == "ext4" {
		img = filepath.Join(dir, "disk.img")
		mkfsExt4(t, img, "32M")
	}
	return img, mnt
}

func startExport(t *testing.T, typ, img, mnt string) (*exec.Cmd, func() string) {
	if typ == "ext4" {
		return startMount(t, "-t", "ext4", img, mnt)
	}
	return startMount(t, "-t", "tmpfs", "none", mnt)
}

// TestMountStopAfterLock is the case that lost data: a file written,
// locked and unlocked with python's fcntl.lockf (as sqlite3 does) and
// closed, a directory made, then the mount ended by SIGTERM, SIGINT or a
// host umount. The command must exit 0 and, for ext4, leave a clean image
// holding both.
func TestMountStopAfterLock(t *testing.T) {
	testenv.RequireRoot(t, "FUSE and kernel loop mounts need root")
	testenv.RequireTool(t, "python3", "mke2fs", "e2fsck", "dumpe2fs")
	for _, typ := range []string{"tmpfs", "ext4"} {
		for _, stop := range stops {
			t.Run(typ+"/"+stop.name, func(t *testing.T) {
				img, mnt := newExport(t, typ)
				c, out := startExport(t, typ, img, mnt)
				shIn(t, mnt, `echo hi > f && python3 -c '
import fcntl
f = open("f", "r+")
fcntl.lockf(f, fcntl.LOCK_EX)
fcntl.lockf(f, fcntl.LOCK_UN)
f.close()' && mkdir d`)
				stopAndCheck(t, c, out, stop, mnt, img, func(kmnt string) {
					if b, err := os.ReadFile(filepath.Join(kmnt, "f")); string(b) != "hi\n" {
						t.Errorf("f in the kernel's view: %q, %v", b, err)
					}
					if fi, err := os.Stat(filepath.Join(kmnt, "d")); err != nil || !fi.IsDir() {
						t.Errorf("d in the kernel's view: %v", err)
					}
				})
			})
		}
	}
}

// TestMountStopHeld ends the mount while a process holds a lock on an
// open file and another waits for it (a SETLKW blocked inside iovfs):
// the command must still exit 0 with a clean image holding what was
// written.
func TestMountStopHeld(t *testing.T) {
	testenv.RequireRoot(t, "FUSE and kernel loop mounts need root")
	testenv.RequireTool(t, "python3", "mke2fs", "e2fsck", "dumpe2fs")
	for _, typ := range []string{"tmpfs", "ext4"} {
		t.Run(typ, func(t *testing.T) {
			img, mnt := newExport(t, typ)
			c, out := startExport(t, typ, img, mnt)
			shIn(t, mnt, `echo data > f`)
			lock := func(ready string) *exec.Cmd {
				p := exec.Command("python3", "-c", `
import fcntl, sys, time
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(120)`, filepath.Join(mnt, "f"))
				out, err := p.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Process.Kill(); p.Wait() })
				if ready != "" {
					line := make(chan string, 1)
					go func() {
						l, _ := bufio.NewReader(out).ReadString('\n')
						line <- l
					}()
					select {
					case l := <-line:
						if !strings.Contains(l, ready) {
							t.Fatalf("the lock holder printed %q", l)
						}
					case <-time.After(30 * time.Second):
						t.Fatalf("the lock holder never locked")
					}
				}
				return p
			}
			lock("locked")
			lock("")                           // waits in SETLKW
			time.Sleep(200 * time.Millisecond) // let it reach the server
			stopAndCheck(t, c, out, stops[0], mnt, img, func(kmnt string) {
				if b, err := os.ReadFile(filepath.Join(kmnt, "f")); string(b) != "data\n" {
					t.Errorf("f in the kernel's view: %q, %v", b, err)
				}
			})
		})
	}
}

// TestMountStopSqlite runs sqlite3 transactions in journal_mode=delete
// and wal on the exports, then ends the mount with SIGTERM: the command
// exits 0 and, for ext4, the kernel opens a database that passes
// integrity_check with every row.
func TestMountStopSqlite(t *testing.T) {
	testenv.RequireRoot(t, "FUSE and kernel loop mounts need root")
	testenv.RequireTool(t, "sqlite3", "mke2fs", "e2fsck", "dumpe2fs")
	for _, typ := range []string{"tmpfs", "ext4"} {
		for _, mode := range []string{"delete", "wal"} {
			t.Run(typ+"/"+mode, func(t *testing.T) {
				img, mnt := newExport(t, typ)
				c, out := startExport(t, typ, img, mnt)
				script := "PRAGMA journal_mode=" + mode + ";\nCREATE TABLE t(i INTEGER, s TEXT);\n"
				for i := range 20 {
					script += "BEGIN;\n"
					for j := range 50 {
						script += "INSERT INTO t VALUES(" + strconv.Itoa(i*50+j) + ", hex(randomblob(100)));\n"
					}
					script += "COMMIT;\n"
				}
				sq := exec.Command("sqlite3", filepath.Join(mnt, "db"))
				sq.Stdin = strings.NewReader(script)
				if b, err := sq.CombinedOutput(); err != nil {
					t.Fatalf("sqlite3: %v\n%s", err, b)
				}
				stopAndCheck(t, c, out, stops[0], mnt, img, func(kmnt string) {
					// A copy: sqlite3 cannot open a WAL database in a
					// read-only directory. A WAL left over is copied with
					// it, and replayed by the check.
					cp := t.TempDir()
					for _, f := range []string{"db", "db-wal"} {
						if b, err := os.ReadFile(filepath.Join(kmnt, f)); err == nil {
							os.WriteFile(filepath.Join(cp, f), b, 0o644)
						}
					}
					b, err := exec.Command("sqlite3", filepath.Join(cp, "db"), "PRAGMA integrity_check; SELECT count(*), sum(i) FROM t;").CombinedOutput()
					if got := strings.TrimSpace(string(b)); err != nil || got != "ok\n1000|499500" {
						t.Errorf("the database in the kernel's view: %q, %v", got, err)
					}
				})
			})
		}
	}
}
