package disk

import (
	"encoding/binary"
	"errors"
	"syscall"
	"testing"
)

// htreeDir lays out dir blocks at block 600 of a testVolume and returns the
// directory inode mapping them.
func htreeDir(t *testing.T, blocks [][]byte) (*Volume, *Inode) {
	t.Helper()
	var body []byte
	for _, b := range blocks {
		body = append(body, b...)
	}
	v := testVolume(&overlayDevice{size: 8 << 20, chunks: []chunk{{600 << 10, body}}})
	raw := make([]byte, 256)
	le := binary.LittleEndian
	le.PutUint16(raw[0:], S_IFDIR|0o755)
	le.PutUint32(raw[4:], uint32(len(body)))
	le.PutUint16(raw[0x1A:], 2)
	le.PutUint32(raw[0x20:], FlagExtents|FlagIndex)
	le.PutUint16(raw[0x80:], 32)
	ib := raw[0x28:]
	le.PutUint16(ib[0:], 0xF30A)
	le.PutUint16(ib[2:], 1)
	le.PutUint16(ib[4:], 4)
	le.PutUint16(ib[16:], uint16(len(blocks)))
	le.PutUint32(ib[20:], 600)
	in, err := v.parseInode(12, raw)
	if err != nil {
		t.Fatal(err)
	}
	return v, in
}

// TestHtreeContinuationBadNode: a lookup that follows a hash-collision
// continuation into a dx node whose limit and count overrun the block must
// fail with EUCLEAN, not index past the block (a bug the first version had).
func TestHtreeContinuationBadNode(t *testing.T) {
	le := binary.LittleEndian
	h, _ := dxHash([]byte("x"), hashHalfMD4, [4]uint32{})
	root := make([]byte, 1024)
	le.PutUint32(root[0:], 12)
	le.PutUint16(root[4:], 12)
	root[6], root[8] = 1, '.'
	le.PutUint32(root[12:], 2)
	le.PutUint16(root[16:], 1012)
	root[18], root[20], root[21] = 2, '.', '.'
	root[0x1C], root[0x1D], root[0x1E] = hashHalfMD4, 8, 1 // one index level below the root
	le.PutUint16(root[0x20:], (1024-0x20)/8)
	le.PutUint16(root[0x22:], 2)
	le.PutUint32(root[0x24:], 1)   // hashes from 0: node at block 1
	le.PutUint32(root[0x28:], h|1) // a continuation of h ...
	le.PutUint32(root[0x2C:], 2)   // ... in the bad node at block 2
	node := func(limit, count uint16, hash uint32) []byte {
		b := make([]byte, 1024)
		le.PutUint16(b[4:], 1024)
		le.PutUint16(b[8:], limit)
		le.PutUint16(b[10:], count)
		for i := 0; 8+8*i+8 <= 1024; i++ {
			if i > 0 {
				le.PutUint32(b[8+8*i:], hash)
			}
			le.PutUint32(b[8+8*i+4:], 3)
		}
		return b
	}
	leaf := make([]byte, 1024)
	le.PutUint16(leaf[4:], 1024)
	// Enough blocks that the visit bound does not stop the walk first.
	blocks := [][]byte{root, node(127, 1, 0), node(65535, 65535, h|1)}
	for len(blocks) < 200 {
		blocks = append(blocks, leaf)
	}
	v, dir := htreeDir(t, blocks)
	_, err := v.Lookup(dir, "x")
	if !errors.Is(err, syscall.EUCLEAN) {
		t.Fatalf("Lookup: %v, want EUCLEAN", err)
	}
	// The same tree with a sane second node finds nothing, without error.
	v, dir = htreeDir(t, [][]byte{root, node(127, 1, 0), node(127, 1, 0), leaf})
	if _, err := v.Lookup(dir, "x"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("Lookup: %v, want ENOENT", err)
	}
}

// TestEAInodeCycle: two inline-data inodes whose system.data values live in
// each other (as EA inodes) must give EUCLEAN, not recurse forever.
func TestEAInodeCycle(t *testing.T) {
	le := binary.LittleEndian
	inode := func(other uint32, flags uint32) []byte {
		raw := make([]byte, 256)
		le.PutUint16(raw[0:], S_IFREG|0o644)
		le.PutUint32(raw[4:], 100) // i_size: 60 inline bytes + 40 in system.data
		le.PutUint16(raw[0x1A:], 1)
		le.PutUint32(raw[0x20:], flags)
		le.PutUint16(raw[0x80:], 32)
		x := raw[128+32:]
		le.PutUint32(x[0:], xattrMagic)
		e := x[4:]
		e[0], e[1] = 4, xSystem // name "data"
		le.PutUint32(e[4:], other)
		le.PutUint32(e[8:], 100)
		copy(e[16:], "data")
		return raw
	}
	itable := append(make([]byte, 11*256), inode(13, FlagInlineData|FlagEAInode)...)
	itable = append(itable, inode(12, FlagInlineData|FlagEAInode)...)
	v := testVolume(&overlayDevice{size: 8 << 20, chunks: []chunk{{5 << 10, itable}}})
	in, err := v.Inode(12)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.ReadAt(in, nil, make([]byte, 100), 0); !errors.Is(err, syscall.EUCLEAN) {
		t.Fatalf("ReadAt: %v, want EUCLEAN", err)
	}
}
