package ext4_test

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStatfsKernel compares Statfs with the kernel's statfs of the same
// image, mounted read-only with noload, for every image kind: all fields
// (f_flags: ST_RDONLY, ST_VALID and ST_RELATIME, which the kernel mount
// adds too).
func TestStatfsKernel(t *testing.T) {
	needRoot(t)
	needMke2fs(t)
	ims := append(images[:len(images):len(images)],
		struct {
			name string
			fill func(testing.TB, string)
			args []string
		}{"nocsum-32bit-I128", populate, []string{"-t", "ext4", "-O", "^metadata_csum,^64bit", "-I", "128"}},
		struct {
			name string
			fill func(testing.TB, string)
			args []string
		}{"meta_bg", populate, []string{"-t", "ext4", "-O", "meta_bg,^resize_inode", "-b", "1024"}},
		struct {
			name string
			fill func(testing.TB, string)
			args []string
		}{"bigalloc", populate, []string{"-t", "ext4", "-O", "bigalloc", "-C", "16384"}})
	ims = append(ims, struct {
		name string
		fill func(testing.TB, string)
		args []string
	}{"groups-1k-64M", populate, []string{"-t", "ext4", "-b", "1024"}},
		struct {
			name string
			fill func(testing.TB, string)
			args []string
		}{"groups-ext3-64M", populate, []string{"-t", "ext3", "-b", "1024"}})
	for _, im := range ims {
		t.Run(im.name, func(t *testing.T) {
			size := 8192
			if strings.Contains(im.name, "64M") {
				size = 65536 // 8 groups: superblock backups in 1, 3, 5 and 7
			}
			img := mkImage(t, size, im.fill, im.args...)
			host := kernelMount(t, img)
			var want unix.Statfs_t
			if err := unix.Statfs(host, &want); err != nil {
				t.Fatal(err)
			}
			p := mountImage(t, img, viaLoop, "")
			got, err := p.Statfs("/mnt")
			if err != nil {
				t.Fatal(err)
			}
			want.Flags &= unix.ST_RDONLY | unix.ST_RELATIME | 0x20
			if got != want {
				t.Errorf("statfs:\n iovfs  %+v\n kernel %+v", got, want)
			}
		})
	}
}
