package disk

// Metadata reads through the buffer cache (block.Cache), as Linux's ext4
// reads its metadata through buffer heads (sb_bread): group descriptors,
// inode table blocks, extent tree and indirect blocks, directory and
// htree blocks, and xattr blocks. The superblock is read once by Open,
// before the block size is known, straight from the device. File data
// keeps its own paths (read.go, and the VFS glue's).

import (
	"github.com/iovfs/iovfs/block"
)

// readMeta reads len(p) bytes of metadata at byte offset off: through the
// buffer cache when the volume has one, block by block, else from the
// device.
func (v *Volume) readMeta(p []byte, off int64) error {
	if v.meta == nil {
		return readFull(v.dev, p, off) // a live volume's dev reads the transaction first
	}
	if v.live != nil && v.live.tx.Len() > 0 {
		return v.readMetaLive(p, off)
	}
	for len(p) > 0 {
		b, err := v.meta.Get(uint64(off) >> v.bsBits)
		if err != nil {
			return err
		}
		n := copy(p, b.Data()[uint64(off)&(v.bs-1):])
		b.Release()
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// Close lets go of the volume's buffer cache view, dropping its blocks.
// The Volume must not be used after.
func (v *Volume) Close() {
	if v.meta != nil {
		v.meta.Close()
	}
}

// MetaView returns the buffer-cache view the volume reads its metadata
// through, or nil.
func (v *Volume) MetaView() *block.View { return v.meta }

// CacheStats returns the counters of the buffer cache the volume reads
// its metadata through; ok is false without one.
func (v *Volume) CacheStats() (st block.CacheStats, ok bool) {
	if v.meta == nil {
		return st, false
	}
	return v.meta.Cache().Stats(), true
}

// readBlockCached is readBlock that also returns the cache's block, held
// (the caller releases it), so the caller can use its verified mark; nil
// without a cache.
func (v *Volume) readBlockCached(blk uint64, buf []byte) (*block.Buf, error) {
	if blk < v.blocks && v.live != nil && v.live.tx.ReadBlock(blk, buf[:v.bs]) {
		return nil, nil // the running transaction's copy: checked afresh
	}
	if v.meta == nil {
		return nil, v.readBlock(blk, buf)
	}
	if blk >= v.blocks {
		return nil, corrupt(0, "block %d beyond the volume", blk)
	}
	b, err := v.meta.Get(blk)
	if err != nil {
		return nil, err
	}
	copy(buf[:v.bs], b.Data())
	return b, nil
}

// blockSet is the set of physical blocks a directory scan has seen: a
// few in an array, a map past that, so a small directory's scan does not
// allocate.
type blockSet struct {
	few [8]uint64
	n   int
	m   map[uint64]struct{}
}

// add records blk and reports false if it was there already.
func (s *blockSet) add(blk uint64) bool {
	for _, b := range s.few[:s.n] {
		if b == blk {
			return false
		}
	}
	if s.m != nil {
		if _, dup := s.m[blk]; dup {
			return false
		}
	}
	if s.n < len(s.few) {
		s.few[s.n] = blk
		s.n++
		return true
	}
	if s.m == nil {
		s.m = map[uint64]struct{}{}
	}
	s.m[blk] = struct{}{}
	return true
}

// verifyTag is the buffer-cache mark of a block verified as a directory
// block of dir: its checksum depends on dir's inode and generation.
func verifyTag(dir *Inode) uint64 { return uint64(dir.Ino)<<1 | 1 }
