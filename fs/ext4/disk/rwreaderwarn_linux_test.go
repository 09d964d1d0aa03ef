package disk

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReaderBesideWriterNoRecoveryWarning: a journalled Writer marks the
// volume needs_recovery while it is open; the Reader that reads beside it
// must not warn that the journal needs recovery (it is the mount's own
// state, not a crash's), while a plain Open of the same bytes does.
func TestReaderBesideWriterNoRecoveryWarning(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	mkfsRW(t, img, 16, "")
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	dev := memWDev(b)
	var warned []string
	logf := func(format string, args ...any) { warned = append(warned, fmt.Sprintf(format, args...)) }
	w, err := OpenWriter(dev, Options{Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Reader(Options{Logf: logf}); err != nil {
		t.Fatal(err)
	}
	for _, s := range warned {
		if strings.Contains(s, "needs recovery") {
			t.Errorf("read-write open warned: %s", s)
		}
	}
	warned = nil
	if _, err := Open(memWDev(dev), Options{Logf: logf}); err != nil {
		t.Fatal(err)
	}
	if len(warned) == 0 || !strings.Contains(strings.Join(warned, "\n"), "needs recovery") {
		t.Errorf("a plain Open of the mounted volume did not warn: %q", warned)
	}
}
