package disk

import "encoding/binary"

// Group descriptors, Documentation/filesystems/ext4/group_descr.rst. Only the
// inode table location is needed by a reader.

// groupHasSuper is ext4_bg_has_super: does group g hold a superblock backup
// (and so, without meta_bg, a descriptor copy)?
func (v *Volume) groupHasSuper(g uint64) bool {
	if g == 0 {
		return true
	}
	if v.compat&compatSparseSuper2 != 0 {
		return g == uint64(v.sbBackupBGs[0]) || g == uint64(v.sbBackupBGs[1])
	}
	if g <= 1 || v.rocompat&rocompatSparseSuper == 0 {
		return true
	}
	if g&1 == 0 {
		return false
	}
	for _, b := range []uint64{3, 5, 7} {
		p := b
		for p < g {
			p *= b
		}
		if p == g {
			return true
		}
	}
	return false
}

// descBlock is the kernel's descriptor_loc: the block holding descriptor
// block nr. With meta_bg, descriptor blocks from s_first_meta_bg on live in
// the first group of their meta group (after its superblock backup).
func (v *Volume) descBlock(nr uint64) uint64 {
	if v.incompat&incompatMetaBG == 0 || nr < uint64(v.firstMetaBG) {
		// The block after the superblock's (logical_sb_block + 1): block
		// 2 with 1 KiB blocks even when s_first_data_block is 0 (bigalloc).
		return 1024>>v.bsBits + 1 + nr
	}
	g := nr * (v.bs / uint64(v.descSize))
	var hasSuper uint64
	if v.groupHasSuper(g) {
		hasSuper = 1
	}
	if v.bs == 1024 && nr == 0 && v.firstData == 0 {
		hasSuper++
	}
	return v.firstData + g*uint64(v.bpg) + hasSuper
}

func (v *Volume) readGroupDescs() error {
	perBlock := v.bs / uint64(v.descSize)
	nblocks := (uint64(v.groups) + perBlock - 1) / perBlock
	// groups ≤ blocks ≤ device blocks, so this allocation is bounded by
	// the device size.
	v.itable = make([]uint64, v.groups)
	bp := v.getBuf()
	defer v.putBuf(bp)
	buf := *bp
	badGroups := 0
	defer func() {
		if badGroups > 0 {
			// Linux only warns about these on a read-only mount.
			v.opt.Logf("ext4: %d group descriptors fail their checksum (ignored on a read-only mount)", badGroups)
		}
	}()
	for nr := uint64(0); nr < nblocks; nr++ {
		blk := v.descBlock(nr)
		if blk >= v.blocks {
			return corrupt(0, "group descriptor block %d beyond the volume", blk)
		}
		if err := v.readBlock(blk, buf); err != nil {
			return err
		}
		for i := uint64(0); i < perBlock; i++ {
			g := nr*perBlock + i
			if g >= uint64(v.groups) {
				break
			}
			d := buf[i*uint64(v.descSize) : (i+1)*uint64(v.descSize)]
			if !v.groupDescCsumOK(uint32(g), d) {
				badGroups++
			}
			it := uint64(le32(d, 0x8))
			if v.descSize >= 64 {
				it |= uint64(le32(d, 0x28)) << 32
			}
			if it < v.firstData || it+v.itableBlocks > v.blocks || it+v.itableBlocks < it {
				return corrupt(0, "group descriptor %d: inode table %d not in the volume", g, it)
			}
			v.itable[g] = it
		}
	}
	return nil
}

func (v *Volume) getBuf() *[]byte  { return v.bufs.Get().(*[]byte) }
func (v *Volume) putBuf(b *[]byte) { v.bufs.Put(b) }

// readBlock reads block blk into buf[:bs].
func (v *Volume) readBlock(blk uint64, buf []byte) error {
	if blk >= v.blocks {
		return corrupt(0, "block %d beyond the volume", blk)
	}
	return v.readMeta(buf[:v.bs], int64(blk<<v.bsBits))
}

// BlockSize returns the file system block size in bytes.
func (v *Volume) BlockSize() int { return int(v.bs) }

// Info returns the superblock figures statfs(2) reports.
func (v *Volume) Info() VolumeInfo { return v.info }

// HasJournal reports whether the volume has an internal journal
// (has_journal).
func (v *Volume) HasJournal() bool { return v.compat&compatHasJournal != 0 }

// FirstIno returns s_first_ino, the first inode number a file may have
// (below it only the root directory's is one).
func (v *Volume) FirstIno() uint32 { return v.firstIno }

// Root returns the root directory's inode number, 2.
func (v *Volume) Root() uint32 { return rootIno }

// groupDescCsumOK is ext4_group_desc_csum_verify: crc32c with
// metadata_csum, crc16 over the UUID, group number and descriptor with
// gdt_csum; the checksum field itself is skipped in both.
func (v *Volume) groupDescCsumOK(g uint32, d []byte) bool {
	var le [4]byte
	binary.LittleEndian.PutUint32(le[:], g)
	switch {
	case v.opt.NoChecksums:
		return true
	case v.csum:
		c := crc32c(v.csumSeed, le[:])
		c = crc32c(c, d[:0x1E])
		c = crc32c(c, zero8[:2])
		c = crc32c(c, d[0x20:])
		return uint16(c) == le16(d, 0x1E)
	case v.rocompat&rocompatGdtCsum != 0:
		c := crc16(0xFFFF, v.info.UUID[:])
		c = crc16(c, le[:])
		c = crc16(c, d[:0x1E])
		if len(d) > 0x20 {
			c = crc16(c, d[0x20:])
		}
		return c == le16(d, 0x1E)
	}
	return true
}
