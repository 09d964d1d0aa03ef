package fat_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/iovfs/iovfs/fs/vfat/fat"
)

// TestAliasTails: the aliases of colliding long names take ~1 to ~9 in
// order, then hashed tails (not ~N); an alias freed by an unlink is
// taken again by the next collision, and slots freed before the end of
// the directory are reused by the next create that fits them.
func TestAliasTails(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)
	v, err := fat.Open(&memDev{seed(t)}, fat.Options{Writeback: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := v.Lookup(v.Root(), "Sub")
	if err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return fmt.Sprintf("colliding name %02d.text", i) }
	for i := range 12 {
		if _, err := v.Create(sub, name(i), false, now); err != nil {
			t.Fatal(err)
		}
	}
	alias := func(tail string) *fat.Node {
		n, err := v.Lookup(sub, "COLLID"+tail+".TEX")
		if err != nil {
			return nil
		}
		return n
	}
	for i := 1; i <= 9; i++ {
		n, _ := v.Lookup(sub, name(i-1))
		if a := alias(fmt.Sprintf("~%d", i)); a == nil || a != n {
			t.Errorf("COLLID~%d.TEX is not the alias of %q", i, name(i-1))
		}
	}
	if alias("~10") != nil || alias("~A") != nil {
		t.Errorf("a numbered tail past ~9")
	}
	if err := v.Remove(sub, name(2), false, now); err != nil {
		t.Fatal(err)
	}
	if alias("~3") != nil {
		t.Fatalf("COLLID~3.TEX still found after its file was removed")
	}
	n, err := v.Create(sub, "colliding name again.text", false, now)
	if err != nil {
		t.Fatal(err)
	}
	if alias("~3") != n {
		t.Errorf("the freed alias COLLID~3.TEX was not taken by the next collision")
	}
	var names []string
	v.ReadDir(sub, 0, func(e fat.DirEntry) bool { names = append(names, e.Name); return true })
	// The new name fills the slots of the removed one (same length).
	for i, nm := range names {
		if nm == "colliding name again.text" && (i == 0 || names[i-1] != name(1)) {
			t.Errorf("the new entry is not in the removed one's slots: %q", names)
		}
	}
	v.Close()
}

// TestExchangeFollowsFiles: after Exchange each name reaches the other
// file, and a node held across the exchange (an open file) is still its
// file: what is written through it is read under its new name, and a
// directory moved under another parent lists its own entries there.
func TestExchangeFollowsFiles(t *testing.T) {
	now := time.Date(2024, 5, 6, 7, 8, 10, 0, time.UTC)
	v, err := fat.Open(&memDev{seed(t)}, fat.Options{Writeback: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := v.Lookup(v.Root(), "Sub")
	a, err := v.Create(v.Root(), "file a", false, now)
	if err != nil {
		t.Fatal(err)
	}
	d, err := v.Create(v.Root(), "dir d", true, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Create(d, "inside d", false, now); err != nil {
		t.Fatal(err)
	}
	long, err := v.Lookup(sub, "long name file.txt")
	if err != nil {
		t.Fatal(err)
	}
	before := make([]byte, 64)
	kb, _ := v.ReadAt(long, before, 0)
	if kb == 0 {
		t.Fatal("Sub/long name file.txt of the seed reads nothing")
	}
	if err := v.Exchange(v.Root(), "file a", sub, "long name file.txt", now); err != nil {
		t.Fatal(err)
	}
	if _, err := v.WriteAt(a, []byte("through the held node"), 0, now); err != nil {
		t.Fatal(err)
	}
	n, err := v.Lookup(sub, "long name file.txt")
	if err != nil || n != a {
		t.Fatalf("Sub/long name file.txt after the exchange: %v, %v; want the node of file a", n, err)
	}
	n, err = v.Lookup(v.Root(), "FILE A")
	if err != nil || n != long {
		t.Fatalf("file a after the exchange: %v, %v; want the node of Sub/long name file.txt", n, err)
	}
	b := make([]byte, 64)
	k, _ := v.ReadAt(n, b, 0)
	if string(b[:k]) != string(before[:kb]) {
		t.Errorf("file a reads %q, want what Sub/long name file.txt held, %q", b[:k], before[:kb])
	}
	if err := v.Exchange(sub, "long name file.txt", v.Root(), "dir d", now); err != nil {
		t.Fatal(err)
	}
	moved, err := v.Lookup(sub, "long name file.txt")
	if err != nil || moved != d || v.Parent(d) != sub {
		t.Fatalf("the directory is not under Sub after the exchange: %v %v", moved, err)
	}
	var names []string
	v.ReadDir(moved, 0, func(e fat.DirEntry) bool { names = append(names, e.Name); return true })
	if len(names) != 1 || names[0] != "inside d" {
		t.Errorf("the moved directory lists %q", names)
	}
	k, _ = v.ReadAt(a, b, 0)
	if string(b[:k]) != "through the held node" {
		t.Errorf("the held file reads %q", b[:k])
	}
	if n, err := v.Lookup(v.Root(), "dir d"); err != nil || n != a {
		t.Errorf("dir d is not the held file after the second exchange: %v", err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
}
