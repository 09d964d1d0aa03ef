package disk

// statfs(2) for a mounted ext4, as Linux's ext4_statfs on a read-only
// mount reports it (the default "bsddf": the blocks the file system's own
// structures take are left out of f_blocks).

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Statfs returns statfs(2)'s figures for the volume as Linux's
// ext4_statfs reports them on a read-only mount:
//
//   - f_blocks is s_blocks_count less the overhead: s_overhead_clusters
//     for bigalloc, else what ext4_calculate_overhead counts (the blocks
//     before s_first_data_block; per group its superblock backup, its
//     descriptor and reserved GDT blocks, its inode table and two bitmaps;
//     the internal journal's blocks);
//   - f_bfree and f_ffree are the sums of the group descriptors' free
//     counts (ext4_count_free_clusters, ext4_count_free_inodes);
//   - f_bavail is f_bfree less s_r_blocks_count and the clusters ext4
//     reserves with extents (2% of the blocks, at most 4096);
//   - f_files is s_inodes_count, f_namelen 255, f_fsid the two halves of
//     the UUID xored (uuid_to_fsid).
func (v *Volume) Statfs() (unix.Statfs_t, error) {
	sb := make([]byte, 1024)
	if err := v.readMeta(sb, 1024); err != nil {
		return unix.Statfs_t{}, err
	}
	freeBlocks, freeInodes, err := v.freeCounts()
	if err != nil {
		return unix.Statfs_t{}, err
	}
	clusterBlocks := v.clusterSize / v.bs
	var overhead uint64 // in blocks
	if v.rocompat&rocompatBigalloc != 0 {
		overhead = uint64(le32(sb, 0x248)) * clusterBlocks
	} else {
		overhead, err = v.overhead(sb)
		if err != nil {
			return unix.Statfs_t{}, err
		}
	}
	rblocks := uint64(le32(sb, 0x8))
	if v.incompat&incompat64bit != 0 {
		rblocks |= uint64(le32(sb, 0x154)) << 32
	}
	var resv uint64
	if v.incompat&incompatExtents != 0 {
		resv = min((v.blocks/clusterBlocks)/50, 4096) * clusterBlocks
	}
	st := unix.Statfs_t{
		Type:    0xEF53, // EXT4_SUPER_MAGIC
		Bsize:   int64(v.bs),
		Frsize:  int64(v.bs),
		Blocks:  v.blocks - overhead,
		Bfree:   freeBlocks,
		Files:   uint64(le32(sb, 0x0)),
		Ffree:   freeInodes,
		Namelen: 255,
	}
	if st.Bfree >= rblocks+resv {
		st.Bavail = st.Bfree - rblocks - resv
	}
	lo := binary.LittleEndian.Uint64(sb[0x68:]) ^ binary.LittleEndian.Uint64(sb[0x70:])
	st.Fsid.Val = [2]int32{int32(uint32(lo)), int32(uint32(lo >> 32))}
	return st, nil
}

// freeCounts sums the group descriptors' free block and inode counts.
func (v *Volume) freeCounts() (blocks, inodes uint64, err error) {
	perBlock := v.bs / uint64(v.descSize)
	nblocks := (uint64(v.groups) + perBlock - 1) / perBlock
	buf := make([]byte, v.bs)
	for nr := uint64(0); nr < nblocks; nr++ {
		if err := v.readBlock(v.descBlock(nr), buf); err != nil {
			return 0, 0, err
		}
		for i := uint64(0); i < perBlock && nr*perBlock+i < uint64(v.groups); i++ {
			d := buf[i*uint64(v.descSize) : (i+1)*uint64(v.descSize)]
			b := uint64(binary.LittleEndian.Uint16(d[0xC:]))
			n := uint64(binary.LittleEndian.Uint16(d[0xE:]))
			if v.descSize >= 64 {
				b |= uint64(binary.LittleEndian.Uint16(d[0x2C:])) << 16
				n |= uint64(binary.LittleEndian.Uint16(d[0x2E:])) << 16
			}
			blocks += b
			inodes += n
		}
	}
	return blocks * (v.clusterSize / v.bs), inodes, nil
}

// overhead is ext4_calculate_overhead without bigalloc.
func (v *Volume) overhead(sb []byte) (uint64, error) {
	perBlock := v.bs / uint64(v.descSize)
	gdbCount := (uint64(v.groups) + perBlock - 1) / perBlock
	o := v.firstData
	for g := uint64(0); g < uint64(v.groups); g++ {
		var super, gdb uint64
		if v.groupHasSuper(g) {
			super = 1
		}
		// ext4_num_base_meta_blocks: descriptor blocks, and the reserved
		// GDT blocks beside every copy of them outside meta_bg.
		if v.incompat&incompatMetaBG == 0 || g/perBlock < uint64(v.firstMetaBG) {
			if super == 1 {
				gdb = gdbCount
				if v.incompat&incompatMetaBG != 0 {
					gdb = uint64(v.firstMetaBG)
				}
				gdb += uint64(le16(sb, 0xCE)) // s_reserved_gdt_blocks
			}
		} else {
			first := g / perBlock * perBlock
			if g == first || g == first+1 || g == first+perBlock-1 {
				gdb = 1
			}
		}
		o += super + gdb + v.itableBlocks + 2
	}
	if jIno := le32(sb, 0xE0); v.compat&compatHasJournal != 0 && jIno != 0 {
		in, err := v.Inode(jIno)
		if err != nil {
			return 0, err
		}
		o += in.Size >> v.bsBits
	}
	return o, nil
}
