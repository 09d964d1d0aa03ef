package main

// One writer per image, across processes: a child iovfs holds an image
// read-write (an iovfs sh with the image attached, waiting on its
// standard input); meanwhile cp into it, a second sh and ls of it are
// refused, naming the image and the holder's pid; once the child exits,
// the same cp works and e2fsck finds the image clean.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
)

func TestImageLockTwoProcesses(t *testing.T) {
	testenv.RequireTool(t, "mke2fs", "e2fsck")
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", img, "32M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "f")
	os.WriteFile(file, []byte("data\n"), 0o644)

	child := exec.Command(os.Args[0], "sh", "--image", img+":/mnt/img:rw", "-c", "echo ready; read x; echo written > /mnt/img/by-child")
	child.Env = append(os.Environ(), "IOVFS_TEST_AS_COMMAND=1")
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	var childErr bytes.Buffer
	child.Stderr = &childErr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	ready := make([]byte, 6)
	if _, err := io.ReadFull(stdout, ready); err != nil {
		t.Fatalf("child: %v\n%s", err, childErr.String())
	}
	holder := fmt.Sprintf("pid %d", child.Process.Pid)
	for _, args := range [][]string{
		{"cp", file, img + ":/f"},
		{"sh", "--image", img + ":/mnt/x:rw", "-c", "true"},
		{"ls", img},
		{"touch", img + ":/t"},
	} {
		var out, errb bytes.Buffer
		st := run(args, &out, &errb)
		msg := errb.String()
		if st != 1 || !strings.Contains(msg, img) || !strings.Contains(msg, holder) {
			t.Errorf("%v while another process writes: status %d, stderr %q; want 1 and a message naming %s and %s", args, st, msg, img, holder)
		}
	}
	stdin.Write([]byte("go\n"))
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("child: %v\n%s", err, childErr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("child did not exit")
	}
	var out, errb bytes.Buffer
	if st := run([]string{"cp", file, img + ":/f"}, &out, &errb); st != 0 {
		t.Fatalf("cp after the writer left: status %d: %s", st, errb.String())
	}
	out.Reset()
	if st := run([]string{"cat", img + ":/by-child"}, &out, &errb); st != 0 || out.String() != "written\n" {
		t.Errorf("the child's write: %q, status %d: %s", out.String(), st, errb.String())
	}
	if o, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
		t.Errorf("e2fsck: %v\n%s", err, o)
	}
}

func TestImageLockSameProcess(t *testing.T) {
	testenv.RequireTool(t, "mke2fs")
	img := filepath.Join(t.TempDir(), "disk.img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	p, err := newProc()
	if err != nil {
		t.Fatal(err)
	}
	defer closeImages()
	if _, err := attachImage(p, img, "/a", true); err != nil {
		t.Fatal(err)
	}
	_, err = attachImage(p, img, "/b", true)
	if err == nil || !strings.Contains(err.Error(), img) || !strings.Contains(err.Error(), "this process") {
		t.Errorf("second writer in the same process: %v", err)
	}
	if _, err := attachImage(p, img, "/c", false); err == nil {
		t.Errorf("a reader beside the writer was let in")
	}
}

// TestImageConfinementCommands: what the issue saw leave the image.
func TestImageConfinementCommands(t *testing.T) {
	testenv.RequireTool(t, "mke2fs")
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "etc"), 0o755)
	os.WriteFile(filepath.Join(src, "etc/passwd"), []byte("IMAGE PASSWD\n"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(src, "pw"))
	os.Symlink("../../../etc/passwd", filepath.Join(src, "etc/uppw"))
	img := filepath.Join(t.TempDir(), "disk.img")
	if out, err := exec.Command("mke2fs", "-q", "-t", "ext4", "-d", src, img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	for _, path := range []string{"/../../etc/passwd", "../etc/passwd", "pw", "etc/uppw", "//etc/passwd"} {
		var out, errb bytes.Buffer
		if st := run([]string{"cat", img + ":" + path}, &out, &errb); st != 0 || out.String() != "IMAGE PASSWD\n" {
			t.Errorf("cat %s: status %d, %q %s", path, st, out.String(), errb.String())
		}
	}
	for _, path := range []string{"//", "", "/..", "../../.."} {
		var out, errb bytes.Buffer
		st := run([]string{"ls", img + ":" + path}, &out, &errb)
		if st != 0 || out.String() != "etc\nlost+found\npw\n" {
			t.Errorf("ls %q: status %d, %q %s", path, st, out.String(), errb.String())
		}
	}
	// Writing through a link that points out stays inside too.
	var out, errb bytes.Buffer
	f := filepath.Join(t.TempDir(), "new")
	os.WriteFile(f, []byte("new\n"), 0o644)
	if st := run([]string{"cp", f, img + ":/../../etc/"}, &out, &errb); st != 0 {
		t.Fatalf("cp into /../../etc/: %d %s", st, errb.String())
	}
	if st := run([]string{"cat", img + ":/etc/new"}, &out, &errb); st != 0 || out.String() != "new\n" {
		t.Errorf("cp through ..: %q %s", out.String(), errb.String())
	}
}

// TestImageLockPartitions: each partition has a writer of its own; a
// second writer of one partition, or of the whole disk, is refused.
func TestImageLockPartitions(t *testing.T) {
	testenv.RequireTool(t, "sgdisk", "mkfs.fat", "fsck.fat")
	img := filepath.Join(t.TempDir(), "disk.img")
	os.WriteFile(img, nil, 0o644)
	os.Truncate(img, 64<<20)
	if out, err := exec.Command("sgdisk", "-n1:2048:+20M", "-t1:ef00", "-c1:ESP", "-n2:0:+20M", "-c2:data", img).CombinedOutput(); err != nil {
		t.Fatalf("sgdisk: %v\n%s", err, out)
	}
	for _, off := range []string{"2048", "43008"} {
		if out, err := exec.Command("mkfs.fat", "-F", "16", "--offset="+off, img, "20480").CombinedOutput(); err != nil {
			t.Fatalf("mkfs.fat: %v\n%s", err, out)
		}
	}
	p, err := newProc()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attachImage(p, img+"@ESP", "/esp", true); err != nil {
		t.Fatal(err)
	}
	if _, err := attachImage(p, img+"@2", "/data", true); err != nil {
		t.Fatalf("a writer of partition 2 beside one of partition 1: %v", err)
	}
	if _, err := attachImage(p, img+"@1", "/again", true); err == nil {
		t.Errorf("a second writer of partition 1 was let in")
	}
	if _, err := attachImage(p, img, "/whole", true); err == nil {
		t.Errorf("a writer of the whole disk beside partition writers was let in")
	}
	for _, d := range []string{"/esp", "/data"} {
		f, err := p.OpenFile(d+"/hello.txt", 0o101, 0o644) // O_WRONLY|O_CREAT
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(d))
		f.Close()
	}
	if err := closeImages(); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if st := run([]string{"cat", img + "@data:/hello.txt"}, &out, &errb); st != 0 || out.String() != "/data" {
		t.Errorf("cat @data: %q %s", out.String(), errb.String())
	}
}
