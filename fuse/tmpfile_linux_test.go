package fuse

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// tmpfileSteps makes unnamed files in dir with O_TMPFILE, names one with
// linkat(AT_EMPTY_PATH), fails to name one made with O_EXCL, and reads
// back what was named; one line per result.
func tmpfileSteps(dir string) []string {
	var out []string
	put := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
	for i, fl := range []int{unix.O_RDWR, unix.O_RDWR | unix.O_EXCL, unix.O_WRONLY} {
		fd, err := unix.Open(dir, unix.O_TMPFILE|fl|unix.O_CLOEXEC, 0o640)
		put("%d open: %v", i, err)
		if err != nil {
			continue
		}
		n, err := unix.Write(fd, []byte("unnamed"))
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		put("%d write %d %v, nlink %d mode %o", i, n, err, st.Nlink, st.Mode)
		name := filepath.Join(dir, fmt.Sprintf("t%d", i))
		put("%d linkat: %v", i, unix.Linkat(fd, "", unix.AT_FDCWD, name, unix.AT_EMPTY_PATH))
		unix.Fstat(fd, &st)
		put("%d nlink %d", i, st.Nlink)
		unix.Close(fd)
		b, err := os.ReadFile(name)
		if pe, ok := err.(*os.PathError); ok {
			err = pe.Err
		}
		put("%d read %q %v", i, b, err)
	}
	return out
}

// TestTmpfile compares O_TMPFILE through the tmpfs and ext4 exports (the
// kernel sends TMPFILE, then LINK) with the kernel's tmpfs.
func TestTmpfile(t *testing.T) {
	dirs := exports(t)
	want := tmpfileSteps(dirs["kernel"])
	for _, name := range []string{"tmpfs", "ext4"} {
		t.Run(name, func(t *testing.T) {
			got := tmpfileSteps(dirs[name])
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("export:\n%s\nkernel:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
