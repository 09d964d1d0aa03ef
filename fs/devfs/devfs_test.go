package devfs_test

import (
	"slices"
	"testing"

	"github.com/iovfs/iovfs"
	"golang.org/x/sys/unix"
)

// TestListDev lists /dev through Getdents, as ls does: every device
// appears once, with its type, and "." and ".." are there.
func TestListDev(t *testing.T) {
	p, err := iovfs.New()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := p.Open("/dev", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(fd)
	seen := map[string]uint8{}
	for {
		ents, err := p.Getdents(fd)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) == 0 {
			break
		}
		for _, e := range ents {
			if _, dup := seen[e.Name]; dup {
				t.Errorf("%s listed twice", e.Name)
			}
			seen[e.Name] = e.Type
		}
	}
	for name, typ := range map[string]uint8{".": unix.DT_DIR, "..": unix.DT_DIR, "null": unix.DT_CHR, "zero": unix.DT_CHR, "urandom": unix.DT_CHR, "loop0": unix.DT_BLK, "ram0": unix.DT_BLK, "loop-control": unix.DT_CHR} {
		if got, ok := seen[name]; !ok || got != typ {
			t.Errorf("%s: type %d present %v, want type %d", name, got, ok, typ)
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	t.Logf("/dev: %v", names)
}
