package disk

import (
	"syscall"
)

// ReadAt reads file data of in at byte offset off into p, with Linux
// pread(2) semantics rather than io.ReaderAt's: it returns 0, nil at or past
// end of file, and a short count without an error when the file ends inside
// p. Holes and unwritten extents read as zeros; inline_data is served from
// the inode. An error is returned only when nothing was read.
//
// c, which may be nil, caches the block mapping between calls (see
// ExtentCache); with a warm cache a read inside one extent does not
// allocate. Directories give EISDIR. Symlinks may be read this way too.
func (v *Volume) ReadAt(in *Inode, c *ExtentCache, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, syscall.EINVAL
	}
	if in.IsDir() {
		return 0, syscall.EISDIR
	}
	if uint64(off) >= in.Size || len(p) == 0 {
		return 0, nil
	}
	if rem := in.Size - uint64(off); uint64(len(p)) > rem {
		p = p[:rem]
	}
	if in.Flags&FlagInlineData != 0 || (in.IsSymlink() && in.fastSymlink()) {
		data, err := v.InlineData(in)
		if err != nil {
			return 0, err
		}
		n := 0
		if uint64(off) < uint64(len(data)) {
			n = copy(p, data[off:])
		}
		clear(p[n:]) // i_size beyond the stored bytes reads as zeros
		return len(p), nil
	}
	if !in.hasData() {
		return 0, syscall.EINVAL
	}
	done := 0
	for done < len(p) {
		pos := uint64(off) + uint64(done)
		var m Mapping
		var err error
		ok := false
		if c != nil {
			m, ok = c.Lookup(in.Ino, pos>>v.bsBits) // inlined hit path
		}
		if !ok {
			m, err = v.mapBlocks(in, c, pos>>v.bsBits)
		}
		if err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		// Clip to the run. Blocks are counted before shifting to bytes, as
		// a hole past the last block map entry can be ~2^48 blocks long.
		chunk := p[done:]
		if left := m.Logical + m.Len - pos>>v.bsBits; left <= uint64(len(chunk))>>v.bsBits+1 {
			if want := left<<v.bsBits - pos&(v.bs-1); uint64(len(chunk)) > want {
				chunk = chunk[:want]
			}
		}
		if m.Hole || m.Unwritten {
			clear(chunk)
		} else {
			dev := m.Physical<<v.bsBits + (pos - m.Logical<<v.bsBits)
			if err := readFull(v.dev, chunk, int64(dev)); err != nil {
				if done > 0 {
					return done, nil
				}
				return 0, err
			}
		}
		done += len(chunk)
	}
	return done, nil
}

// fastSymlink reports a symlink whose target sits in i_block.
func (in *Inode) fastSymlink() bool { return in.fast }

// Readlink returns the target of symlink in. Fast symlinks and inline-data
// symlinks are read from the inode, slow ones from their data block. A
// target longer than a block, or empty, is EUCLEAN, as in ext4_iget.
func (v *Volume) Readlink(in *Inode) (string, error) {
	if !in.IsSymlink() {
		return "", syscall.EINVAL
	}
	if in.Size == 0 || in.Size >= v.bs || in.Size > 4095 {
		return "", corrupt(in.Ino, "symlink length %d invalid", in.Size)
	}
	buf := make([]byte, in.Size)
	n, err := v.ReadAt(in, nil, buf, 0)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
