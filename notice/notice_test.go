package notice

import (
	"sync"
	"testing"
)

func TestHandler(t *testing.T) {
	Printf("ext4", "/dev/loop0", "dropped %d", 1) // no handler: dropped
	var mu sync.Mutex
	var got []Notice
	old := SetHandler(func(n Notice) { mu.Lock(); got = append(got, n); mu.Unlock() })
	defer func() { SetHandler(old) }()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { Printf("ext4", "/dev/loop0", "replayed %d", i) })
	}
	wg.Wait()
	Post(Notice{Driver: "tmpfs", Msg: "m"})
	if len(got) != 9 {
		t.Fatalf("%d notices, want 9", len(got))
	}
	if s := got[8].String(); s != "tmpfs: m" {
		t.Errorf("String() = %q", s)
	}
	if s := got[0].String(); s[:18] != "ext4 (/dev/loop0):" {
		t.Errorf("String() = %q", s)
	}
	if prev := SetHandler(nil); prev == nil {
		t.Error("SetHandler returned nil for the installed handler")
	}
	Printf("ext4", "", "after removal")
	if len(got) != 9 {
		t.Errorf("a notice reached a removed handler")
	}
	SetHandler(old)
}
