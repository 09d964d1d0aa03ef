package block_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/iovfs/iovfs/block"
)

func mbrSlot(b []byte, slot int, typ byte, start, count uint32) {
	e := b[0x1be+16*slot:]
	e[4] = typ
	binary.LittleEndian.PutUint32(e[8:], start)
	binary.LittleEndian.PutUint32(e[12:], count)
	b[510], b[511] = 0x55, 0xaa
}

// gptDisk builds a disk of n sectors with a protective MBR and primary
// and backup GPTs holding the given (first, last, name) entries.
func gptDisk(n int, ents [][3]any) []byte {
	d := make([]byte, n*512)
	mbrSlot(d, 0, 0xee, 1, uint32(n-1))
	arr := make([]byte, 128*128)
	for i, e := range ents {
		p := arr[i*128:]
		p[0] = 1 // a non-zero type GUID
		binary.LittleEndian.PutUint64(p[32:], uint64(e[0].(int)))
		binary.LittleEndian.PutUint64(p[40:], uint64(e[1].(int)))
		for j, c := range e[2].(string) {
			binary.LittleEndian.PutUint16(p[56+2*j:], uint16(c))
		}
	}
	hdr := func(my, alt, entLBA int) []byte {
		h := make([]byte, 512)
		copy(h, "EFI PART")
		binary.LittleEndian.PutUint32(h[8:], 0x10000)
		binary.LittleEndian.PutUint32(h[12:], 92)
		binary.LittleEndian.PutUint64(h[24:], uint64(my))
		binary.LittleEndian.PutUint64(h[32:], uint64(alt))
		binary.LittleEndian.PutUint64(h[40:], 34)
		binary.LittleEndian.PutUint64(h[48:], uint64(n-34))
		binary.LittleEndian.PutUint64(h[72:], uint64(entLBA))
		binary.LittleEndian.PutUint32(h[80:], 128)
		binary.LittleEndian.PutUint32(h[84:], 128)
		binary.LittleEndian.PutUint32(h[88:], crc32.ChecksumIEEE(arr))
		binary.LittleEndian.PutUint32(h[16:], crc32.ChecksumIEEE(h[:92]))
		return h
	}
	copy(d[512:], hdr(1, n-1, 2))
	copy(d[2*512:], arr)
	copy(d[(n-33)*512:], arr)
	copy(d[(n-1)*512:], hdr(n-1, 1, n-33))
	return d
}

func readTable(d []byte, force bool) (*block.Table, error) {
	return block.ReadTable(bytes.NewReader(d), int64(len(d)), 512, block.TableOptions{ForceGPT: force})
}

func TestGPTBackup(t *testing.T) {
	d := gptDisk(2048, [][3]any{{100, 199, "ESP"}, {200, 999, "root"}})
	tab, err := readTable(d, false)
	if err != nil || tab.Kind != block.TableGPT || len(tab.Parts) != 2 || tab.Parts[1].Name != "root" || tab.Backup {
		t.Fatalf("intact: %+v %v", tab, err)
	}
	if ps := tab.ByName("ESP"); len(ps) != 1 || ps[0].Start != 100*512 || ps[0].Size != 100*512 {
		t.Fatalf("ByName: %+v", ps)
	}
	d[512+20] ^= 1 // the primary header's CRC no longer matches
	if _, err := readTable(d, false); !errors.Is(err, block.ErrNoTable) {
		t.Errorf("damaged primary, default: %v, want ErrNoTable (the kernel without gpt)", err)
	}
	tab, err = readTable(d, true)
	if err != nil || !tab.Backup || len(tab.Parts) != 2 {
		t.Fatalf("damaged primary, forced: %+v %v", tab, err)
	}
	d[512+20] ^= 1
	d[2*512+40] ^= 1 // entries' CRC
	if tab, err := readTable(d, true); err != nil || !tab.Backup {
		t.Fatalf("damaged primary entries, forced: %+v %v", tab, err)
	}
	// Both damaged: no table.
	d[(2048-33)*512+40] ^= 1
	if _, err := readTable(d, true); !errors.Is(err, block.ErrNoTable) {
		t.Errorf("both damaged: %v", err)
	}
}

func TestEBRLoop(t *testing.T) {
	d := make([]byte, 1<<20)
	mbrSlot(d, 0, 0x05, 100, 1000)
	mbrSlot(d[100*512:], 0, 0x83, 1, 10)
	mbrSlot(d[100*512:], 1, 0x05, 0, 1000) // links back to itself
	tab, err := readTable(d, false)
	if err != nil {
		t.Fatal(err)
	}
	// Each pass adds the data partition again, as the kernel does, until
	// the partition limit stops it.
	if n := len(tab.Parts); n != 252 {
		t.Errorf("%d partitions, want 252 (1 extended and logical 5-255)", n)
	}
	// A chain of links with no data partition stops after 100 steps.
	d2 := make([]byte, 1<<20)
	mbrSlot(d2, 0, 0x05, 100, 1000)
	mbrSlot(d2[100*512:], 0, 0x05, 0, 1000)
	if tab, err := readTable(d2, false); err != nil || len(tab.Parts) != 1 {
		t.Errorf("empty loop: %+v %v", tab, err)
	}
}

func TestFATBootSectorIsNoTable(t *testing.T) {
	d := make([]byte, 64<<10)
	d[0], d[1], d[2] = 0xeb, 0x3c, 0x90
	copy(d[3:], "mkfs.fat")
	d[0x1be] = 0x12 // a boot flag neither 0 nor 0x80
	d[510], d[511] = 0x55, 0xaa
	if _, err := readTable(d, false); !errors.Is(err, block.ErrNoTable) {
		t.Errorf("FAT boot sector: %v", err)
	}
}

func FuzzReadTable(f *testing.F) {
	f.Add(gptDisk(256, [][3]any{{40, 99, "a"}, {100, 200, "b"}}), false)
	d := make([]byte, 64<<10)
	mbrSlot(d, 0, 0x83, 1, 10)
	mbrSlot(d, 1, 0x05, 20, 100)
	mbrSlot(d[20*512:], 0, 0x83, 1, 10)
	mbrSlot(d[20*512:], 1, 0x05, 20, 30)
	mbrSlot(d[40*512:], 0, 0x0c, 2, 10)
	f.Add(d, false)
	f.Add(d[:1024], true)
	f.Fuzz(func(t *testing.T, disk []byte, force bool) {
		if len(disk) > 1<<20 {
			return
		}
		tab, err := readTable(disk, force)
		if err != nil {
			return
		}
		seen := map[int]bool{}
		for _, p := range tab.Parts {
			if p.Number < 1 || p.Number > 255 || seen[p.Number] {
				t.Fatalf("bad number %d in %+v", p.Number, tab.Parts)
			}
			seen[p.Number] = true
			if p.Start < 0 || p.Size <= 0 || p.Start+p.Size > int64(len(disk)) {
				t.Fatalf("partition %d outside the disk: %+v", p.Number, p)
			}
		}
	})
}
