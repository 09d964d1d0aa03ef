package disk

// Fuzz targets. Seeds under testdata/fuzz/<Name>/ come from small mke2fs
// images (regenerate with IOVFS_EXT4_GENSEEDS=1 go test -run TestGenerateFuzzSeeds).
// Images travel in a sparse encoding so that seeds stay small:
//
//	u32 image size, then chunks of (u32 offset, u16 length, bytes)
//
// decoded onto an overlayDevice that reads zeros outside the chunks.

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"testing"
	"time"
)

type chunk struct {
	off  int64
	data []byte
}

// overlayDevice reads as zeros except where chunks cover it.
type overlayDevice struct {
	size   int64
	chunks []chunk
}

func (d *overlayDevice) Size() int64 { return d.size }

func (d *overlayDevice) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > d.size {
		return 0, errShortDevice
	}
	clear(p)
	end := off + int64(len(p))
	for _, c := range d.chunks {
		ce := c.off + int64(len(c.data))
		if ce <= off || c.off >= end {
			continue
		}
		s, e := max(c.off, off), min(ce, end)
		copy(p[s-off:e-off], c.data[s-c.off:e-c.off])
	}
	return len(p), nil
}

var errShortDevice = fmt.Errorf("overlay: read past the device end: %w", syscall.EIO)

const maxFuzzImage = 64 << 20

func decodeSparse(b []byte) *overlayDevice {
	d := &overlayDevice{}
	if len(b) < 4 {
		return d
	}
	d.size = int64(binary.LittleEndian.Uint32(b)) % maxFuzzImage
	b = b[4:]
	for len(b) >= 6 && len(d.chunks) < 4096 {
		off := int64(binary.LittleEndian.Uint32(b))
		n := int(binary.LittleEndian.Uint16(b[4:]))
		b = b[6:]
		n = min(n, len(b))
		d.chunks = append(d.chunks, chunk{off, b[:n]})
		b = b[n:]
	}
	return d
}

// encodeSparse is decodeSparse's inverse, keeping non-zero 64-byte granules.
func encodeSparse(img []byte) []byte {
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(img)))
	const g = 64
	nonzero := func(i int) bool {
		for _, c := range img[i:min(i+g, len(img))] {
			if c != 0 {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(img); {
		if !nonzero(i) {
			i += g
			continue
		}
		j := i
		for j < len(img) && nonzero(j) && j-i < 65535-g {
			j += g
		}
		j = min(j, len(img))
		out = binary.LittleEndian.AppendUint32(out, uint32(i))
		out = binary.LittleEndian.AppendUint16(out, uint16(j-i))
		out = append(out, img[i:j]...)
		i = j
	}
	return out
}

// testVolume is a Volume with fixed, sane geometry over dev: 1 KiB blocks,
// 256-byte inodes, one group whose inode table is at block 5. Checksums are
// off so that mutations reach the parsers.
func testVolume(dev Device) *Volume {
	v := &Volume{
		dev: dev, opt: Options{Logf: func(string, ...any) {}},
		bs: 1024, bsBits: 10, clusterSize: 1024,
		blocks: uint64(dev.Size()) >> 10, firstData: 1,
		inodes: 2048, ipg: 2048, bpg: 8192, inodeSize: 256, firstIno: 11, groups: 1, descSize: 32,
		itable: []uint64{5}, itableBlocks: 512,
		compat:   compatDirIndex,
		incompat: incompatFiletype | incompatExtents | incompatInlineData | incompatEAInode | incompatLargeDir,
		rocompat: rocompatHugeFile | rocompatExtraIsize,
		linuxOS:  true,
		icache:   map[uint32]*Inode{}, imax: 64,
	}
	v.bufs.New = func() any { b := make([]byte, v.bs); return &b }
	return v
}

// exercise drives every read-side operation on in, ignoring errors: the
// point is that none panics, loops or allocates without bound.
func exercise(v *Volume, in *Inode) {
	_, _ = v.ListXattr(in)
	_, _ = v.GetXattr(in, "user.a")
	_, _ = v.GetXattr(in, "system.posix_acl_access")
	var c ExtentCache
	for _, l := range []uint64{0, 1, 2, 11, 12, 13, 100, 267, 268, 1000, 65804, 1 << 20, 1<<32 - 1} {
		_, _ = v.MapBlocks(in, &c, l)
	}
	buf := make([]byte, 3000)
	for off := int64(0); off < 64<<10; {
		n, err := v.ReadAt(in, &c, buf, off)
		if n == 0 || err != nil {
			break
		}
		off += int64(n)
	}
	_, _ = v.ReadAt(in, nil, buf, 5<<30)
	_, _ = v.Readlink(in)
	if in.IsDir() {
		var names []string
		_ = v.ReadDir(in, func(name []byte, ino uint32, ft uint8) bool {
			names = append(names, string(name))
			return len(names) < 1000
		})
		_ = v.ReadDirFrom(in, 13, func([]byte, uint32, uint8, int64) bool { return true })
		for _, n := range append(names, "..", "missing", "lost+found") {
			_, _ = v.Lookup(in, n)
		}
	}
}

// FuzzSuperblock: data is the volume from offset 1024 (superblock, then
// group descriptors) on a 64 MiB zero device.
func FuzzSuperblock(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		dev := &overlayDevice{size: 64 << 20, chunks: []chunk{{1024, data}}}
		v, err := Open(dev, Options{})
		if err != nil {
			return
		}
		if in, err := v.Inode(v.Root()); err == nil {
			exercise(v, in)
		}
	})
}

// FuzzInode: data is an on-disk inode (256 bytes) followed by bytes placed
// both at block 600 on, where its extents, xattr block or directory may
// point, and over the inode table from inode 13 on, so that EA inodes and
// directory entries find fuzzed inodes.
func FuzzInode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 256 {
			return
		}
		dev := &overlayDevice{size: 8 << 20, chunks: []chunk{{600 << 10, data[256:]}, {5<<10 + 12*256, data[256:]}}}
		v := testVolume(dev)
		in, err := v.parseInode(12, data[:256])
		if err != nil {
			return
		}
		exercise(v, in)
	})
}

// FuzzExtentTree: data[:60] is i_block, the rest is laid out from block 600
// on; the inode is walked both as an extent tree and as a block map.
func FuzzExtentTree(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 60 {
			return
		}
		dev := &overlayDevice{size: 8 << 20, chunks: []chunk{{600 << 10, data[60:]}}}
		v := testVolume(dev)
		for _, flags := range []uint32{FlagExtents, 0} {
			raw := make([]byte, 256)
			binary.LittleEndian.PutUint16(raw[0:], S_IFREG|0o644)
			binary.LittleEndian.PutUint32(raw[4:], 1<<30) // i_size
			binary.LittleEndian.PutUint16(raw[0x1A:], 1)
			binary.LittleEndian.PutUint32(raw[0x20:], flags)
			binary.LittleEndian.PutUint16(raw[0x80:], 32)
			copy(raw[0x28:0x64], data[:60])
			in, err := v.parseInode(12, raw)
			if err != nil {
				continue
			}
			exercise(v, in)
		}
	})
}

// FuzzDirBlock: data[0] selects an indexed (htree) directory; data[1:] are
// directory blocks mapped as logical blocks 0.. of the directory.
func FuzzDirBlock(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		body := data[1:]
		nblk := (len(body) + 1023) / 1024
		if nblk > 256 {
			return
		}
		dev := &overlayDevice{size: 8 << 20, chunks: []chunk{{600 << 10, body}}}
		v := testVolume(dev)
		raw := make([]byte, 256)
		binary.LittleEndian.PutUint16(raw[0:], S_IFDIR|0o755)
		binary.LittleEndian.PutUint32(raw[4:], uint32(nblk)*1024)
		binary.LittleEndian.PutUint16(raw[0x1A:], 2)
		flags := uint32(FlagExtents)
		if data[0]&1 != 0 {
			flags |= FlagIndex
		}
		if data[0]&2 != 0 {
			v.hashUnsigned = true
		}
		binary.LittleEndian.PutUint32(raw[0x20:], flags)
		binary.LittleEndian.PutUint16(raw[0x80:], 32)
		// One extent: logical 0..nblk-1 at block 600.
		ib := raw[0x28:]
		binary.LittleEndian.PutUint16(ib[0:], 0xF30A)
		binary.LittleEndian.PutUint16(ib[2:], 1)
		binary.LittleEndian.PutUint16(ib[4:], 4)
		binary.LittleEndian.PutUint16(ib[16:], uint16(nblk))
		binary.LittleEndian.PutUint32(ib[20:], 600)
		in, err := v.parseInode(12, raw)
		if err != nil {
			t.Fatal(err)
		}
		exercise(v, in)
	})
}

// FuzzImage: a whole small image in the sparse encoding; open and walk it.
func FuzzImage(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		dev := decodeSparse(data)
		for _, nocsum := range []bool{false, true} {
			v, err := Open(dev, Options{NoChecksums: nocsum})
			if err != nil {
				continue
			}
			var st walkStats
			walkVolume(v, time.Now().Add(time.Second), 1<<20, &st)
		}
	})
}
