package vfs

import (
	"strings"
	"testing"
)

// TestIndexSlash: indexSlash agrees with strings.IndexByte on both sides
// of its 32-byte loop.
func TestIndexSlash(t *testing.T) {
	for n := 0; n <= 70; n++ {
		for at := -1; at < n; at++ {
			b := []byte(strings.Repeat("a", n))
			if at >= 0 {
				b[at] = '/'
				if at+3 < n {
					b[at+3] = '/'
				}
			}
			s := string(b)
			if got, want := indexSlash(s), strings.IndexByte(s, '/'); got != want {
				t.Fatalf("indexSlash(%q) = %d, want %d", s, got, want)
			}
		}
	}
}
