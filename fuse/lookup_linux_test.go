package fuse

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLookupCounts checks that the kernel's references balance: after a
// workload of lookups, creates, renames, links, removals and
// READDIRPLUS listings, invalidating every name (FUSE_NOTIFY_INVAL_ENTRY,
// deepest first) makes the kernel forget every node, and the table is
// back to the root alone. (The kernel sends no FORGET at unmount.)
func TestLookupCounts(t *testing.T) {
	requireFUSE(t)
	p := newProc(t)
	mnt := t.TempDir()
	s, err := Mount(p, "/tmp", mnt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unmount()
	for i := range 50 {
		d := filepath.Join(mnt, fmt.Sprintf("d%d", i%5))
		os.MkdirAll(d, 0o755)
		f := filepath.Join(d, fmt.Sprintf("f%d", i))
		os.WriteFile(f, []byte("x"), 0o644)
		if i%3 == 0 {
			os.Link(f, f+".l")
		}
		if i%4 == 0 {
			os.Rename(f, f+".r")
		}
		if i%7 == 0 {
			os.Remove(f + ".l")
		}
	}
	for i := range 5 {
		os.ReadDir(filepath.Join(mnt, fmt.Sprintf("d%d", i)))
		entries, _ := os.ReadDir(filepath.Join(mnt, fmt.Sprintf("d%d", i)))
		for _, e := range entries {
			os.Stat(filepath.Join(mnt, fmt.Sprintf("d%d", i), e.Name()))
		}
	}
	s.mu.Lock()
	before := len(s.nodes)
	s.mu.Unlock()
	if before < 50 {
		t.Fatalf("only %d nodes known after the workload", before)
	}
	// Every name, from iovfs's side, deepest first.
	type entry struct {
		dir  string
		name string
	}
	var names []entry
	var walk func(dir string)
	walk = func(dir string) {
		fd, err := p.Open(dir, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(fd)
		for {
			ds, err := p.Getdents(fd)
			if err != nil || len(ds) == 0 {
				break
			}
			for _, d := range ds {
				if d.Name == "." || d.Name == ".." {
					continue
				}
				if d.Type == 4 { // DT_DIR
					walk(dir + "/" + d.Name)
				}
				names = append(names, entry{dir, d.Name})
			}
		}
	}
	walk("/tmp")
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, e := range names {
			x, err := p.Statx(unix.AT_FDCWD, e.dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS)
			if err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			n := s.byKey[nodeKey{x.Mnt_id, x.Ino}]
			s.mu.Unlock()
			if n != nil {
				s.srv.EntryNotify(n.id, e.name)
			}
		}
		s.mu.Lock()
		left := len(s.nodes)
		s.mu.Unlock()
		if left == 1 {
			break
		}
		if time.Now().After(deadline) {
			s.mu.Lock()
			i := 0
			for id, n := range s.nodes {
				if i++; i < 10 {
					x, _ := s.statFd(n.fd)
					t.Errorf("node %d (inode %d) still has %d lookups", id, x.Ino, n.lookups)
				}
			}
			s.mu.Unlock()
			t.Fatalf("%d nodes left (of %d) after invalidating every name, want only the root", left, before)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
