package disk

// The orphan file (COMPAT_ORPHAN_FILE, fs/ext4/orphan.c): on a volume
// with a journal and this feature, an orphan is recorded as its inode
// number in a free slot of the orphan file instead of on the s_last_orphan
// list, so that adding and removing one changes one block and no other
// inode. mke2fs sizes the file; the kernel never grows it, and when every
// slot is taken it falls back to the list, as the Writer does.
//
// Each block of the file holds (block size - 8) / 4 little-endian inode
// numbers (0: free) and ends with a tail: the magic 0x0b10ca04 and, on a
// metadata_csum volume, crc32c from the orphan file inode's checksum seed
// over the block's physical number (little-endian 64 bits) and the slots.
// OpenWriter reads the file and checks every block, as
// ext4_init_orphan_info, and refuses a damaged one (a *CorruptError, as
// the kernel's mount fails with EIO). While a read-write Writer has a
// journal the superblock carries RO_COMPAT_ORPHAN_PRESENT, set at the
// mount and cleared at Close (rwsuper.go), and the orphans of the file
// are processed at the mount after those of the list.
//
// Locking: everything here runs under the Writer's mu.

import (
	"encoding/binary"
)

const (
	sbOrphanFileInum      = 0x280      // s_orphan_file_inum
	rocompatOrphanPresent = 0x10000    // RO_COMPAT_ORPHAN_PRESENT
	orphanBlockMagic      = 0x0b10ca04 // EXT4_ORPHAN_BLOCK_MAGIC
)

// orphanFile is the open orphan file of a Writer.
type orphanFile struct {
	ino  uint32
	seed uint32   // the orphan file inode's checksum seed
	phys []uint64 // the physical block of each of its blocks
	blks [][]byte // their contents, as last written
	free []int    // free slots of each block
	// low: no block before it has a free slot; lowSlot[i]: no slot of
	// block i before it is free. orphanFileAdd takes the first free slot
	// of the first block with one, as a scan from the start would, in
	// amortised constant time.
	low     int
	lowSlot []int
	// slot is where each orphan recorded in the file sits: block
	// index*perBlock + entry.
	slot map[uint32]int
}

// perBlock is the number of slots of an orphan file block
// (ext4_inodes_per_orphan_block).
func (w *Writer) orphanPerBlock() int { return (int(w.v.bs) - 8) / 4 }

// openOrphanFile loads the orphan file of a volume with orphan_file.
func (w *Writer) openOrphanFile() error {
	ino := le32(w.sb, sbOrphanFileInum)
	if ino == 0 || ino > w.v.inodes {
		return corrupt(0, "orphan_file without a valid s_orphan_file_inum (%d)", ino)
	}
	raw, err := w.getInode(ino)
	if err != nil {
		return err
	}
	in, err := w.v.Inode(ino)
	if err != nil {
		return err
	}
	if iMode(raw)&S_IFMT != S_IFREG {
		return corrupt(ino, "orphan file is not a regular file (mode %#o)", iMode(raw))
	}
	// The Writer keeps the whole file in memory, as the kernel keeps a
	// buffer for each block: a damaged size must not make it allocate
	// without bound (mke2fs makes at most a few MiB).
	n := iSize(raw) >> w.v.bsBits
	if n == 0 || n<<w.v.bsBits > 64<<20 {
		return corrupt(ino, "orphan file of %d blocks", n)
	}
	of := &orphanFile{ino: ino, seed: w.inodeSeed(ino, raw), slot: map[uint32]int{}}
	per := w.orphanPerBlock()
	var c ExtentCache
	for i := uint64(0); i < n; i++ {
		m, err := w.v.MapBlocks(in, &c, i)
		if err != nil {
			return err
		}
		if m.Hole || m.Unwritten {
			return corrupt(ino, "orphan file has a hole at block %d", i)
		}
		p := m.Physical + (i - m.Logical)
		b := make([]byte, w.v.bs)
		if err := readFull(w.tx, b, int64(p<<w.v.bsBits)); err != nil {
			return err
		}
		if le32(b, int(w.v.bs)-8) != orphanBlockMagic {
			return corrupt(ino, "orphan file block %d: bad magic", i)
		}
		if w.v.rocompat&rocompatMetadataCsum != 0 && le32(b, int(w.v.bs)-4) != of.csum(p, b, per) {
			return badCsum(ino, "orphan file block %d", i)
		}
		free := 0
		for j := 0; j < per; j++ {
			if le32(b, 4*j) == 0 {
				free++
			}
		}
		of.phys, of.blks, of.free = append(of.phys, p), append(of.blks, b), append(of.free, free)
		of.lowSlot = append(of.lowSlot, 0)
	}
	w.ofile = of
	return nil
}

// csum is the block tail's checksum of orphan file block b at physical
// block p.
func (of *orphanFile) csum(p uint64, b []byte, per int) uint32 {
	var nr [8]byte
	binary.LittleEndian.PutUint64(nr[:], p)
	return crc32c(crc32c(of.seed, nr[:]), b[:4*per])
}

// setSlot stores ino (0 to free it) in slot s and writes the block
// through the running transaction.
func (w *Writer) setSlot(s int, ino uint32) error {
	of, per := w.ofile, w.orphanPerBlock()
	i, j := s/per, s%per
	b := of.blks[i]
	binary.LittleEndian.PutUint32(b[4*j:], ino)
	if w.v.rocompat&rocompatMetadataCsum != 0 {
		binary.LittleEndian.PutUint32(b[int(w.v.bs)-4:], of.csum(of.phys[i], b, per))
	}
	return w.writeAt(b, int64(of.phys[i]<<w.v.bsBits))
}

// orphanFileAdd records ino in a free slot of the orphan file, as
// ext4_orphan_file_add; false when there is no orphan file or no free
// slot (the caller then uses the list).
func (w *Writer) orphanFileAdd(ino uint32) (bool, error) {
	of := w.ofile
	if of == nil || w.j == nil {
		return false, nil
	}
	if _, ok := of.slot[ino]; ok {
		return true, nil
	}
	per := w.orphanPerBlock()
	for ; of.low < len(of.free); of.low++ {
		i := of.low
		if of.free[i] == 0 {
			continue
		}
		for j := of.lowSlot[i]; j < per; j++ {
			if le32(of.blks[i], 4*j) == 0 {
				of.free[i]--
				of.lowSlot[i] = j + 1
				of.slot[ino] = i*per + j
				return true, w.setSlot(i*per+j, ino)
			}
		}
		of.free[i] = 0 // not reached: free counts the block's zero slots
	}
	return false, nil
}

// orphanFileDel frees ino's slot, as ext4_orphan_file_del; false when ino
// has none.
func (w *Writer) orphanFileDel(ino uint32) (bool, error) {
	of := w.ofile
	if of == nil {
		return false, nil
	}
	s, ok := of.slot[ino]
	if !ok {
		return false, nil
	}
	delete(of.slot, ino)
	per := w.orphanPerBlock()
	i := s / per
	of.free[i]++
	of.low = min(of.low, i)
	of.lowSlot[i] = min(of.lowSlot[i], s%per)
	return true, w.setSlot(s, 0)
}

// orphanFileEntries lists the orphans the file records, in slot order,
// and takes note of their slots.
func (w *Writer) orphanFileEntries() []uint32 {
	of := w.ofile
	if of == nil {
		return nil
	}
	per := w.orphanPerBlock()
	var inos []uint32
	for i, b := range of.blks {
		for j := 0; j < per; j++ {
			if ino := le32(b, 4*j); ino != 0 {
				of.slot[ino] = i*per + j
				inos = append(inos, ino)
			}
		}
	}
	return inos
}
