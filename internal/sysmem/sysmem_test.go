package sysmem

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestFigures(t *testing.T) {
	total, avail := Total(), Available()
	if total <= 0 || avail <= 0 || avail > total {
		t.Fatalf("Total %d, Available %d: want 0 < Available <= Total", total, avail)
	}
	if err := Check(1<<20, "a 1 MiB buffer"); err != nil {
		t.Errorf("1 MiB: %v", err)
	}
	err := Check(total+1, "a RAM disk")
	if !errors.Is(err, syscall.ENOMEM) || !strings.HasPrefix(err.Error(), "a RAM disk needs ") {
		t.Errorf("more than the machine has: %v", err)
	}
	if err := Check(-1, "x"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("negative: %v", err)
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB",
		100 << 30: "100 GiB", 51 << 50: "51 PiB", 1<<63 - 1: "8 EiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
