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
