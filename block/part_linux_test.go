package block_test

// Partition tables compared with the readers of util-linux and gdisk:
// partx (libblkid) for numbering, offsets and sizes, sfdisk --json
// (libfdisk) for 4 KiB-sector disks, and, where this machine's kernel
// scans partitions, the kernel's own (losetup -P, /sys/block). The tables
// are made by sfdisk and sgdisk.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/internal/linuxvm"
	"github.com/iovfs/iovfs/internal/testenv"
)

type partCase struct {
	name  string
	size  int64 // bytes
	ss    int   // sector size
	make  func(t *testing.T, img string)
	force bool // read as the image tools do (backup GPT)
	// kernelNone: the kernel (without "gpt") finds no table, though
	// partx and the image tools do.
	kernelNone bool
}

func run(t *testing.T, stdin string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func sfdisk(script string, extra ...string) func(t *testing.T, img string) {
	return func(t *testing.T, img string) {
		run(t, script, "sfdisk", append(append([]string{"-q", "--no-reread", "--no-tell-kernel"}, extra...), img)...)
	}
}

// sfdisk4k writes the table through a host loop device with 4 KiB
// logical sectors (this sfdisk takes the sector size from the device).
func sfdisk4k(script string) func(t *testing.T, img string) {
	return func(t *testing.T, img string) {
		testenv.RequireRoot(t, "a 4 KiB-sector loop device for sfdisk")
		withLoop4k(t, img, func(dev string) { sfdisk(script)(t, dev) })
	}
}

func withLoop4k(t *testing.T, img string, fn func(dev string)) {
	t.Helper()
	out, err := exec.Command("losetup", "-f", "--show", "-b", "4096", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v\n%s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	defer exec.Command("losetup", "-d", dev).Run()
	fn(dev)
}

func sgdisk(args ...string) func(t *testing.T, img string) {
	return func(t *testing.T, img string) {
		run(t, "", "sgdisk", append(args, img)...)
	}
}

// damage overwrites count sectors at lba with junk.
func damage(lba, count int64, then func(t *testing.T, img string)) func(t *testing.T, img string) {
	return func(t *testing.T, img string) {
		then(t, img)
		f, err := os.OpenFile(img, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		junk := bytes.Repeat([]byte{0xa5}, int(count*512))
		if _, err := f.WriteAt(junk, lba*512); err != nil {
			t.Fatal(err)
		}
	}
}

var partCases = []partCase{
	{name: "dos-primary", size: 64 << 20, make: sfdisk("label: dos\n,8M,83\n,8M,c,*\n,8M,82\n")},
	{name: "dos-gap", size: 64 << 20, make: sfdisk("label: dos\n2048,4096,83\n20480,4096,83\n")},
	{name: "dos-extended", size: 64 << 20, make: sfdisk("label: dos\n,10M,83\n,40M,5\n,5M,83\n,5M,83\n,5M,c\n")},
	{name: "dos-extended-last", size: 64 << 20, make: sfdisk("label: dos\n,4M,83\n,4M,83\n,4M,83\n,,f\n,2M\n,2M\n,2M\n,2M\n,2M\n,2M\n")},
	{name: "dos-linux-extended", size: 64 << 20, make: sfdisk("label: dos\n,20M,85\n,5M,83\n,5M,83\n,,83\n")},
	{name: "dos-past-end", size: 32 << 20, make: func(t *testing.T, img string) {
		if err := os.WriteFile(img+".big", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(img+".big", 64<<20); err != nil {
			t.Fatal(err)
		}
		sfdisk("label: dos\n,8M,83\n,40M,83\n")(t, img+".big")
		truncateCopy(t, img+".big", img, 32<<20)
	}},
	{name: "dos-4k", size: 64 << 20, ss: 4096, make: sfdisk4k("label: dos\n,8M,83\n,20M,5\n,4M,83\n,4M,83\n")},
	{name: "gpt", size: 64 << 20, make: sgdisk("-n1:2048:+10M", "-t1:ef00", "-c1:EFI system", "-n2:0:+20M", "-c2:root", "-n3:0:0", "-c3:home")},
	{name: "gpt-sparse-entries", size: 64 << 20, make: sgdisk("-n5:2048:+4M", "-c5:five", "-n2:0:+4M", "-c2:two", "-n128:0:+4M", "-c128:last")},
	{name: "gpt-sfdisk", size: 64 << 20, make: sfdisk("label: gpt\nsize=8M, type=U\nsize=8M, type=L, name=data\ntype=S\n")},
	{name: "gpt-4k", size: 64 << 20, ss: 4096, make: sfdisk4k("label: gpt\n,8M,U\n,16M,L\n")},
	{name: "gpt-hybrid", size: 64 << 20, make: func(t *testing.T, img string) {
		sgdisk("-n1:2048:+10M", "-t1:0700", "-n2:0:+10M")(t, img)
		run(t, "", "sgdisk", "-h", "1", img)
	}},
	{name: "gpt-damaged-primary-header", size: 64 << 20, make: damage(1, 1, sgdisk("-n1:2048:+10M", "-c1:ESP", "-n2:0:+20M", "-c2:root")), force: true, kernelNone: true},
	{name: "gpt-damaged-primary-entries", size: 64 << 20, make: damage(2, 1, sgdisk("-n1:2048:+10M", "-c1:ESP", "-n2:0:+20M", "-c2:root")), force: true, kernelNone: true},
}

func truncateCopy(t *testing.T, src, dst string, size int64) {
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b[:size], 0o644); err != nil {
		t.Fatal(err)
	}
}

// oracle is one reader's view: number -> [start, size] in bytes.
type oracle map[int][2]int64

// partxView reads the table with partx (libblkid), in 512-byte sectors.
func partxView(t *testing.T, img string) oracle {
	out, err := exec.Command("partx", "-g", "-b", "-o", "NR,START,SECTORS", img).CombinedOutput()
	if err != nil {
		t.Fatalf("partx: %v\n%s", err, out)
	}
	o := oracle{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		n, _ := strconv.Atoi(f[0])
		s, _ := strconv.ParseInt(f[1], 10, 64)
		c, _ := strconv.ParseInt(f[2], 10, 64)
		o[n] = [2]int64{s * 512, c * 512}
	}
	return o
}

// sfdiskView reads the table with sfdisk --json at sector size ss.
func sfdiskView(t *testing.T, img string, ss int) oracle {
	var out []byte
	var err error
	withLoop4k(t, img, func(dev string) { out, err = exec.Command("sfdisk", "--json", dev).Output() })
	if err != nil {
		t.Fatalf("sfdisk --json: %v", err)
	}
	var v struct {
		PartitionTable struct {
			Partitions []struct {
				Node        string
				Start, Size int64
			}
		}
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	o := oracle{}
	for _, p := range v.PartitionTable.Partitions {
		i := len(p.Node) - 1
		for i > 0 && p.Node[i-1] >= '0' && p.Node[i-1] <= '9' {
			i--
		}
		n, _ := strconv.Atoi(p.Node[i:])
		o[n] = [2]int64{p.Start * int64(ss), p.Size * int64(ss)}
	}
	return o
}

// kernelScans reports whether this machine's kernel reads DOS and GPT
// tables (CONFIG_MSDOS_PARTITION, CONFIG_EFI_PARTITION).
func kernelScans() (bool, string) {
	out, err := exec.Command("sh", "-c", "zcat /proc/config.gz 2>/dev/null | grep -E '^(# )?CONFIG_(MSDOS|EFI)_PARTITION'").Output()
	if err != nil || len(out) == 0 {
		return true, "" // no config to read: assume a distribution kernel
	}
	if bytes.Contains(out, []byte("CONFIG_MSDOS_PARTITION is not set")) || bytes.Contains(out, []byte("CONFIG_EFI_PARTITION is not set")) {
		return false, strings.TrimSpace(string(out))
	}
	return true, ""
}

// kernelView binds img to a host loop device with partition scanning
// and reads the partitions from sysfs.
func kernelView(t *testing.T, img string, ss int) oracle {
	args := []string{"-f", "--show", "-P", "-r"}
	if ss != 512 {
		args = append(args, "-b", strconv.Itoa(ss))
	}
	out, err := exec.Command("losetup", append(args, img)...).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v\n%s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	defer exec.Command("losetup", "-d", dev).Run()
	name := filepath.Base(dev)
	o := oracle{}
	time.Sleep(100 * time.Millisecond)
	parts, _ := filepath.Glob("/sys/block/" + name + "/" + name + "p*")
	for _, p := range parts {
		n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), name+"p"))
		s, _ := os.ReadFile(p + "/start")
		c, _ := os.ReadFile(p + "/size")
		si, _ := strconv.ParseInt(strings.TrimSpace(string(s)), 10, 64)
		ci, _ := strconv.ParseInt(strings.TrimSpace(string(c)), 10, 64)
		o[n] = [2]int64{si * 512, ci * 512}
	}
	return o
}

func ourView(t *testing.T, img string, ss int, force bool) (oracle, *block.Table) {
	f, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	tab, err := block.ReadTable(f, st.Size(), ss, block.TableOptions{ForceGPT: force})
	if errors.Is(err, block.ErrNoTable) {
		return oracle{}, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	o := oracle{}
	for _, p := range tab.Parts {
		o[p.Number] = [2]int64{p.Start, p.Size}
	}
	return o, tab
}

func diff(what string, got, want oracle, extended map[int]bool) string {
	var b strings.Builder
	for n, w := range want {
		g, ok := got[n]
		switch {
		case !ok:
			fmt.Fprintf(&b, "%s: partition %d missing (want start %d size %d)\n", what, n, w[0], w[1])
		case extended[n] && g[0] == w[0]:
			// partx and sfdisk give an extended partition's whole size;
			// its node covers 2 sectors (checked against the kernel).
		case g != w:
			fmt.Fprintf(&b, "%s: partition %d: got start %d size %d, want start %d size %d\n", what, n, g[0], g[1], w[0], w[1])
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			fmt.Fprintf(&b, "%s: partition %d not expected\n", what, n)
		}
	}
	return b.String()
}

func TestPartitionTablesDifferential(t *testing.T) {
	testenv.RequireTool(t, "sfdisk", "sgdisk", "partx")
	kernel, why := kernelScans()
	// The kernel's views: the host's through losetup -P where it scans
	// partitions, else a Debian kernel in a QEMU guest, which reads all
	// the 512-byte-sector images as its virtio disks in one boot.
	type made struct {
		c   partCase
		img string
		ss  int
	}
	var imgs []made
	for _, c := range partCases {
		ss := c.ss
		if ss == 0 {
			ss = 512
		}
		img := filepath.Join(t.TempDir(), c.name+".img")
		if err := os.WriteFile(img, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(img, c.size); err != nil {
			t.Fatal(err)
		}
		c.make(t, img)
		imgs = append(imgs, made{c, img, ss})
	}
	kernelViews := map[string]oracle{}
	switch {
	case kernel && os.Geteuid() == 0:
		for _, m := range imgs {
			kernelViews[m.c.name] = kernelView(t, m.img, m.ss)
		}
	case !kernel:
		t.Logf("the host kernel makes no partitions (%s): its twin is a Debian kernel in a QEMU guest (linuxvm)", strings.ReplaceAll(why, "\n", "; "))
		linuxvm.Require(t)
		var disks []string
		var names []string
		for _, m := range imgs {
			if m.ss == 512 {
				disks = append(disks, m.img)
				names = append(names, m.c.name)
			}
		}
		var views []oracle
		if err := linuxvm.Run(t, "parts", nil, disks, len(disks), &views); err != nil {
			t.Fatal(err)
		}
		for i, v := range views {
			kernelViews[names[i]] = v
		}
	}
	compared, kernelCompared := 0, 0
	for _, m := range imgs {
		c, img, ss := m.c, m.img, m.ss
		t.Run(c.name, func(t *testing.T) {
			got, tab := ourView(t, img, ss, c.force)
			ext := map[int]bool{}
			if tab != nil {
				for _, p := range tab.Parts {
					if p.Extended {
						ext[p.Number] = true
						if p.Size != max(2*512, int64(ss)) {
							t.Errorf("extended partition %d: node size %d, want the kernel's %d", p.Number, p.Size, max(2*512, int64(ss)))
						}
					}
				}
			}
			var want oracle
			if ss == 512 {
				want = partxView(t, img)
			} else {
				want = sfdiskView(t, img, ss)
			}
			if c.name == "dos-past-end" {
				// partx shows the table as written; the kernel cuts the
				// partition at the disk's end.
				p := want[2]
				want[2] = [2]int64{p[0], c.size - p[0]}
				if q := tab.Part(2); q == nil || !q.Truncated {
					t.Errorf("partition 2 not marked truncated")
				}
			}
			if len(want) == 0 {
				t.Fatalf("the oracle found no partitions")
			}
			if d := diff("partx/sfdisk", got, want, ext); d != "" {
				t.Error(d)
			}
			compared += len(want)
			if c.force {
				// The kernel without "gpt" does not read the backup.
				def, _ := ourView(t, img, ss, false)
				if len(def) != 0 {
					t.Errorf("default (kernel) reading found %d partitions on a damaged primary GPT, want none", len(def))
				}
			}
			kv, ok := kernelViews[c.name]
			if !ok {
				return
			}
			kgot, _ := ourView(t, img, ss, false)
			if d := diff("kernel", kgot, kv, nil); d != "" {
				t.Error(d)
			}
			if c.kernelNone && len(kv) != 0 {
				t.Errorf("kernel found %v on a damaged primary GPT", kv)
			}
			kernelCompared += len(kv)
		})
	}
	t.Logf("%d partitions compared with partx/sfdisk over %d tables; %d partitions of %d tables with the kernel's", compared, len(partCases), kernelCompared, len(kernelViews))
}
