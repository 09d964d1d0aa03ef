package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestTouchGNU runs touch's options on a host file with GNU touch and on a
// file in an ext4 image with iovfs touch, and compares the times they
// leave (to the nanosecond), the files they create and their exit status.
func TestTouchGNU(t *testing.T) {
	testenv.RequireTool(t, "mke2fs", "touch")
	if out, _ := exec.Command("touch", "--version").Output(); !bytes.Contains(out, []byte("GNU")) {
		t.Skip("needs GNU touch")
	}
	// Both touches run as commands of their own with TZ set: a zone with
	// DST (this process's time.Local was fixed when it was first used).
	t.Setenv("TZ", "Europe/Paris")
	dir := t.TempDir()
	img := filepath.Join(dir, "e.img")
	mkfsExt4(t, img, "8M", "-I", "256")
	host := filepath.Join(dir, "host")
	os.Mkdir(host, 0o755)
	ref := filepath.Join(dir, "ref")
	os.WriteFile(ref, nil, 0o644)
	if err := unix.UtimesNano(ref, []unix.Timespec{{Sec: 1234567890, Nsec: 5}, {Sec: 987654321, Nsec: 123456789}}); err != nil {
		t.Fatal(err)
	}
	const old = 1600000000 // the files' times before each case
	cases := [][]string{
		{"-d", "@0"},
		{"-d", "@1700000000.123456789"},
		{"-d", "@-5.25"},
		{"-d", "2024-05-06 07:08:09"},
		{"-d", "2024-05-06T07:08:09.5"},
		{"-d", "2024-01-15 12:00"},
		{"-d", "2024-07-15"},
		{"-d", "2024-05-06 07:08:09Z"},
		{"-d", "2024-05-06 07:08:09+05:30"},
		{"--date=2024-05-06 07:08:09 UTC"},
		{"-t", "202401020304.05"},
		{"-t", "2401020304"},
		{"-t", "7001020304"},
		{"-t", "01020304"},
		{"-t", "202402300000"},
		{"-t", "2024010203"},
		{"-d", "not a date"},
		{"-r", ref},
		{"--reference=" + ref},
		{"-a", "-d", "@1700000000"},
		{"-m", "-d", "@1700000000"},
		{"-am", "-d", "@1700000000"},
		{"-md", "@1700000000"},
		{"-c", "-d", "@1700000000"},
		{"--no-create", "-d", "@1700000000"},
		{"-d", "@1", "-t", "01020304"},
	}
	for i, args := range cases {
		for _, name := range []string{"exists", "missing"} {
			hf := filepath.Join(host, name)
			os.Remove(hf)
			run([]string{"rm", "-f", img + ":/" + name}, nil, nil)
			if name == "exists" {
				os.WriteFile(hf, nil, 0o644)
				unix.UtimesNano(hf, []unix.Timespec{{Sec: old}, {Sec: old}})
				if st := run([]string{"touch", "-d", "@1600000000", img + ":/" + name}, os.Stderr, os.Stderr); st != 0 {
					t.Fatalf("touch -d @1600000000 in the image: status %d", st)
				}
			}
			gnu := exec.Command("touch", append(append([]string{}, args...), hf)...)
			gnuOut, _ := gnu.CombinedOutput()
			gnuStatus := gnu.ProcessState.ExitCode()
			// The test binary stands in for the iovfs command (TestMain).
			ours := exec.Command(os.Args[0], append(append([]string{"touch"}, args...), img+":/"+name)...)
			ours.Env = append(os.Environ(), "IOVFS_TEST_AS_COMMAND=1")
			stderr, _ := ours.CombinedOutput()
			st := ours.ProcessState.ExitCode()
			// GNU touch's usage errors exit 1; iovfs's exit 2, as its
			// other commands' do.
			if st != gnuStatus && !(gnuStatus == 1 && st == 2) {
				t.Errorf("case %d %q on the %s file: status %d (%s); GNU touch %d (%s)", i, args, name, st, stderr, gnuStatus, gnuOut)
				continue
			}
			var hst unix.Stat_t
			herr := unix.Stat(hf, &hst)
			var o strings.Builder
			ist := run([]string{"stat", img + ":/" + name}, &o, &o)
			if herr != nil {
				if ist == 0 {
					t.Errorf("case %d %q: GNU touch left no %s file, iovfs touch made one", i, args, name)
				}
				continue
			}
			if ist != 0 {
				t.Errorf("case %d %q: GNU touch made the %s file, iovfs touch did not: %s", i, args, name, o.String())
				continue
			}
			if time.Since(time.Unix(hst.Mtim.Unix())) < time.Minute || time.Since(time.Unix(hst.Atim.Unix())) < time.Minute {
				continue // "now": compared by the other cases
			}
			want := time.Unix(hst.Atim.Unix()).Format("2006-01-02 15:04:05.000000000") + " " + time.Unix(hst.Mtim.Unix()).Format("2006-01-02 15:04:05.000000000")
			got := iovfsTimes(t, img, name)
			if got != want {
				t.Errorf("case %d %q on the %s file: iovfs times %s; GNU touch's %s", i, args, name, got, want)
			}
		}
	}
}

// iovfsTimes returns the access and modification times of /name in img
// as iovfs stat prints them, in UTC.
func iovfsTimes(t *testing.T, img, name string) string {
	var o strings.Builder
	if st := run([]string{"stat", img + ":/" + name}, &o, &o); st != 0 {
		t.Fatalf("iovfs stat: %s", o.String())
	}
	var at, mt string
	for _, l := range strings.Split(o.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "Access: "); ok && !strings.HasPrefix(v, "(") {
			at = v
		}
		if v, ok := strings.CutPrefix(l, "Modify: "); ok {
			mt = v
		}
	}
	parse := func(s string) string {
		tm, err := time.Parse("2006-01-02 15:04:05.999999999 -0700", s)
		if err != nil {
			t.Fatalf("iovfs stat's time %q: %v", s, err)
		}
		return tm.In(time.Local).Format("2006-01-02 15:04:05.000000000")
	}
	return parse(at) + " " + parse(mt)
}
