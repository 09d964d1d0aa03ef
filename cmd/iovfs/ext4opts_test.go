package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/internal/testenv"
)

// TestExportExt4Options: iovfs mount hands the ext4 journal and error
// options to the driver unchanged (only ro/rw become flags): a good set
// mounts and shows in the mount table, a bad value gives EINVAL.
func TestExportExt4Options(t *testing.T) {
	testenv.RequireTool(t, "mke2fs")
	img := filepath.Join(t.TempDir(), "disk.img")
	mkfsExt4(t, img, "16M")
	const opts = "data=journal,errors=remount-ro,commit=1,journal_checksum"
	p, root, _, err := buildExport("ext4", img, 0, opts)
	if err != nil {
		t.Fatalf("buildExport %q: %v", opts, err)
	}
	found := false
	for _, m := range p.Namespace().Mounts() {
		if m.Target == root && strings.Contains(m.Options, opts) {
			found = true
		}
	}
	if !found {
		t.Errorf("mount table %+v: no %s mount with %q", p.Namespace().Mounts(), root, opts)
	}
	fd, err := p.Open(root+"/f", unix.O_CREAT|unix.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Write(fd, []byte("journaled")); n != 9 {
		t.Fatal(n, err)
	}
	p.Close(fd)
	if err := p.Unmount(root, 0); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("e2fsck", "-fn", img).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, out)
	}
	if _, _, _, err := buildExport("ext4", img, 0, "data=bogus"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("data=bogus: %v, want EINVAL", err)
	}
}

// fileDev is an disk.WriteDevice over a host file.
type fileDev struct{ *os.File }

func (d fileDev) Size() int64 {
	st, _ := d.Stat()
	return st.Size()
}

// TestImageToolsDirtyJournal: an image whose journal needs recovery (a
// Writer left open: needs_recovery set) cannot be replayed through the
// image tools' read-only loop device (EROFS, as Linux's ro mount of a
// read-only device); the tools mount it with noload instead, and leave
// the image file as it was.
func TestImageToolsDirtyJournal(t *testing.T) {
	testenv.RequireTool(t, "mke2fs")
	img := filepath.Join(t.TempDir(), "disk.img")
	mkfsExt4(t, img, "16M")
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := disk.OpenWriter(fileDev{f}, disk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Create(2, "kept", 0o644, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close() // no Close: needs_recovery stays set
	before, _ := os.ReadFile(img)
	if need, err := disk.NeedsRecovery(fileDev{mustOpen(t, img)}); !need || err != nil {
		t.Fatalf("NeedsRecovery: %v, %v", need, err)
	}
	p, err := newProc()
	if err != nil {
		t.Fatal(err)
	}
	im, err := attachImage(p, img, "/img", false)
	if err != nil {
		t.Fatalf("attachImage of a dirty image: %v", err)
	}
	if !im.Replayed {
		t.Errorf("the journal was not replayed in memory")
	}
	if _, err := p.Stat("/img/kept"); err != nil {
		t.Errorf("stat /img/kept: %v", err)
	}
	if err := closeImages(); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(img); !bytes.Equal(before, after) {
		t.Error("the image tools wrote to the image")
	}
}

func mustOpen(t *testing.T, name string) *os.File {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
