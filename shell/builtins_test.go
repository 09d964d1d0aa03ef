package shell

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/internal/testenv"
)

// The builtins with no host twin to compare against (they act on the
// iovfs namespace's own devices and mounts), each checked against the
// output util-linux or NuttX would give.

func runDev(t *testing.T, script string) (string, string, int) {
	t.Helper()
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	sh, err := New(p, Options{Stdout: &out, Stderr: &errb, Env: []string{"FOO=bar"}})
	if err != nil {
		t.Fatal(err)
	}
	st := sh.RunScript(context.Background(), strings.NewReader(script), "")
	return out.String(), errb.String(), st
}

func TestMkrdMountLosetup(t *testing.T) {
	// mkrd makes a RAM disk; losetup binds a file on tmpfs to a loop
	// device; dd writes through it; -a, -l and -d report and undo it.
	out, errs, st := runDev(t, `mkrd 2048; ls -l /dev/ram1 | head -c 10; echo
truncate -s 1M /tmp/backing
losetup -f
losetup -f --show -o 4096 --sizelimit 65536 /tmp/backing
losetup -a
losetup -l
printf 'through-loop' | dd of=/dev/loop0 bs=512 conv=sync status=none
dd if=/tmp/backing bs=1 skip=4096 count=12 status=none; echo
losetup -r /dev/loop1 /tmp/backing; echo w | dd of=/dev/loop1 status=none; echo $?
losetup -d /dev/loop0 /dev/loop1; losetup -a; echo end
losetup -d /dev/loop5; echo $?
mount | head -3
mount -t tmpfs -o size=1m,mode=700 tmpfs /mnt; mount | tail -1; ls -ld /mnt | head -c 10; echo
umount /mnt; umount /mnt; echo $?
mkdir /tmp/m; mount -t nosuchfs x /tmp/m; echo $?
mount -t tmpfs tmpfs /tmp/m; touch /tmp/m/f; exec 3</tmp/m/f 2>/dev/null; umount -l /tmp/m; echo lazy $?; ls /tmp/m
sync; echo sync $?; sync /tmp/nope; echo $?`)
	want := `brw-rw----
/dev/loop0
/dev/loop0
/dev/loop0: [0019]:2 (/tmp/backing)
NAME       SIZELIMIT OFFSET AUTOCLEAR RO BACK-FILE DIO LOG-SEC
/dev/loop0     65536   4096         0  0 /tmp/backing   0     512
through-loop
1
end
1
none / none rw 0 0
none /dev none rw 0 0
tmpfs /tmp tmpfs rw,mode=1777 0 0
tmpfs /mnt tmpfs rw,size=1m,mode=700 0 0
drwx------
32
32
lazy 0
sync 0
1
`
	if out != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out, want)
	}
	for _, e := range []string{"dd: error writing", "losetup: /dev/loop5: detach failed", "umount: /mnt: not mounted.", "mount: /tmp/m: No such device", "sync: error opening '/tmp/nope'"} {
		if !strings.Contains(errs, e) {
			t.Errorf("stderr lacks %q:\n%s", e, errs)
		}
	}
	if st != 0 {
		t.Errorf("status %d", st)
	}
}

func TestEnvIdHelpExit(t *testing.T) {
	out, _, st := runDev(t, `export A=1; B=2; env | grep 2>/dev/null; env; id; id -u; id -gn; help | wc -l; exit 7; echo not-here`)
	if st != 7 || strings.Contains(out, "not-here") {
		t.Fatalf("exit 7: status %d\n%s", st, out)
	}
	for _, w := range []string{"A=1\n", "FOO=bar\n", "uid=0(root) gid=0(root) groups=0(root)\n0\nroot\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "B=2") {
		t.Errorf("env shows an unexported variable:\n%s", out)
	}
	n := len(Builtins())
	if !strings.Contains(out, "\n"+itoa(n)+"\n") {
		t.Errorf("help has not one line per command (%d):\n%s", n, out)
	}
}

func itoa(n int) string {
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func TestUnprivileged(t *testing.T) {
	p, _ := iovfs.New()
	if err := p.Setresuid(1000, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	sh, _ := New(p, Options{Stdout: &out, Stderr: &errb})
	st := sh.RunScript(context.Background(), strings.NewReader(`id -u; touch /f; echo $?; mount -t tmpfs t /mnt; echo $?; touch /tmp/mine; ls -n /tmp/mine | head -c 20; echo`), "")
	if st != 0 || out.String() != "1000\n1\n32\n-rw-r--r-- 1 1000 0 \n" {
		t.Errorf("status %d, stdout %q, stderr %q", st, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "touch: cannot touch '/f': Permission denied") ||
		!strings.Contains(errb.String(), "mount: /mnt: Operation not permitted") {
		t.Errorf("stderr %q", errb.String())
	}
}

// TestHostfsInOut brings a host directory in with mount -t hostfs, copies
// a file from the host into tmpfs and a file back out.
func TestHostfsInOut(t *testing.T) {
	testenv.RequireRoot(t, "hostfs opens host paths as the test's user")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("from host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, st := run(t, `mkdir /mnt/h; mount -t hostfs `+dir+` /mnt/h; cp /mnt/h/in.txt /tmp/; cat /tmp/in.txt; echo made-inside > /mnt/h/out.txt; umount /mnt/h`)
	if st != 0 || out != "from host\n" {
		t.Fatalf("status %d, stdout %q, stderr %q", st, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "made-inside\n" {
		t.Errorf("host file: %q, %v", b, err)
	}
}

// TestCpKeeps: cp keeps holes (SEEK_DATA/SEEK_HOLE), -p keeps mode and
// times, -a also xattrs and hard links inside the tree.
func TestCpKeeps(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	sh, _ := New(p, Options{Stdout: &out, Stderr: &errb})
	if st := sh.RunScript(context.Background(), strings.NewReader(`mkdir /tmp/a; truncate -s 64M /tmp/a/sparse; echo tail >> /tmp/a/sparse
printf x | dd of=/tmp/a/sparse bs=1 seek=1000000 conv=notrunc status=none
echo v > /tmp/a/f; chmod 640 /tmp/a/f; touch -d '2001-02-03 04:05:06' /tmp/a/f; ln /tmp/a/f /tmp/a/g`), ""); st != 0 {
		t.Fatalf("setup: %d %s", st, errb.String())
	}
	if err := p.Setxattr("/tmp/a/f", "user.k", []byte("val"), 0); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	st := sh.RunScript(context.Background(), strings.NewReader(`cp /tmp/a/sparse /tmp/s; cmp_size=$(wc -c < /tmp/s); echo $cmp_size
du -s /tmp/s; cp -p /tmp/a/f /tmp/p; ls -l /tmp/p; cp -a /tmp/a /tmp/b; ls -l /tmp/b/f /tmp/b/g; cp /tmp/a/f /tmp/n; ls -l /tmp/n | head -c 10; echo`), "")
	if st != 0 {
		t.Fatalf("status %d, stderr %s", st, errb.String())
	}
	lines := strings.Split(out.String(), "\n")
	want := []string{"67108869", "8\t/tmp/s", "-rw-r----- 1 root root 2 Feb  3  2001 /tmp/p",
		"-rw-r----- 2 root root 2 Feb  3  2001 /tmp/b/f", "-rw-r----- 2 root root 2 Feb  3  2001 /tmp/b/g", "-rw-r-----"}
	for i, w := range want {
		if i >= len(lines) || lines[i] != w {
			t.Errorf("line %d: %q, want %q\n%s", i, lines[min(i, len(lines)-1)], w, out.String())
		}
	}
	if v, err := p.Getxattr("/tmp/b/f", "user.k"); err != nil || string(v) != "val" {
		t.Errorf("cp -a xattr: %q, %v", v, err)
	}
	if _, err := p.Getxattr("/tmp/p", "user.k"); err == nil {
		t.Errorf("cp -p copied an xattr")
	}
	sa, _ := p.Stat("/tmp/a/sparse")
	ss, _ := p.Stat("/tmp/s")
	if ss.Blocks > sa.Blocks {
		t.Errorf("copy has %d blocks, source %d: holes filled", ss.Blocks, sa.Blocks)
	}
}
