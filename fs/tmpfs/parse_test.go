package tmpfs

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	cases := []struct {
		data string
		want Options
		err  syscall.Errno
	}{
		{"", Options{}, 0},
		{"size=64m,mode=1777", Options{SizeLimit: 64 << 20, Mode: 0o1777, ModeSet: true}, 0},
		{"size=4096", Options{SizeLimit: 4096}, 0},
		{"size=1K", Options{SizeLimit: 1024}, 0},
		{"size=2g", Options{SizeLimit: 2 << 30}, 0},
		{"size=1t,nr_inodes=1k", Options{SizeLimit: 1 << 40, NrInodes: 1024}, 0},
		{"size=0x1000", Options{SizeLimit: 4096}, 0},
		{"size=010", Options{SizeLimit: 8}, 0}, // memparse: octal
		{"size=0", Options{}, 0},
		{"nr_blocks=3", Options{SizeLimit: 3 * 4096}, 0},
		{"mode=0", Options{Mode: 0, ModeSet: true}, 0},
		{"mode=17777", Options{Mode: 0o7777, ModeSet: true}, 0}, // Linux masks with 07777
		{"uid=1000,gid=100", Options{Uid: 1000, Gid: 100}, 0},
		{",size=1m,,", Options{SizeLimit: 1 << 20}, 0},
		{"inode64,noswap,huge=within_size,size=1k", Options{SizeLimit: 1024}, 0},
		{"huge=sometimes", Options{}, unix.EINVAL},
		{"nosuid", Options{}, unix.EINVAL}, // a mount flag, not tmpfs data
		{"size=50%", Options{}, unix.EINVAL},
		{"size=", Options{}, unix.EINVAL},
		{"size", Options{}, unix.EINVAL},
		{"size=1x", Options{}, unix.EINVAL},
		{"size=-1", Options{}, unix.EINVAL},
		{"size=9e", Options{}, unix.EINVAL}, // overflows
		{"mode=8", Options{}, unix.EINVAL},
		{"uid=-1", Options{}, unix.EINVAL},
		{"uid=4294967295", Options{}, unix.EINVAL},
		{"bogus=1", Options{}, unix.EINVAL},
	}
	for _, c := range cases {
		got, err := Parse(c.data)
		if errno(err) != c.err || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", c.data, got, err, c.want, c.err)
		}
	}
}

func TestOptions(t *testing.T) {
	fs := New(Options{Mode: 0o700, ModeSet: true, Uid: 5, Gid: 6})
	if st := mustStat(t, fs.Root()); st.Mode != unix.S_IFDIR|0o700 || st.Uid != 5 || st.Gid != 6 {
		t.Fatalf("root %+v", st)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"size=64m,mode=1777", "nr_inodes=0x10,uid=1", "size=010k", ",,", "size=50%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		o, err := Parse(data)
		if err != nil {
			if o != (Options{}) {
				t.Fatalf("error with options %+v", o)
			}
			return
		}
		if o.SizeLimit < 0 || o.NrInodes < 0 || o.Mode&^0o7777 != 0 {
			t.Fatalf("bad options %+v", o)
		}
		New(o)
	})
}
