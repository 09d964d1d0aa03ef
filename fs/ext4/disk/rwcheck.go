package disk

// Checks the Writer makes on metadata it reads before changing it, so
// that damage is reported (EBADMSG, and ext4_error's record through
// ReportError) instead of being rewritten with a fresh checksum.

// checkDirBlock verifies the metadata_csum checksum of buf, logical block
// lblk of directory dir (raw inode draw), as __ext4_read_dirblock does.
func (w *Writer) checkDirBlock(dir uint32, draw []byte, lblk uint64, buf []byte) error {
	if !w.v.csum {
		return nil
	}
	// The fields dirBlockCsum reads, without parsing (or allocating) the
	// whole inode.
	in := Inode{Ino: dir, Flags: iFlags(draw), csumSeed: w.inodeSeed(dir, draw)}
	return w.v.dirBlockCsum(&in, lblk, buf)
}
