package jbd2

// Recovery (fs/jbd2/recovery.c): the transactions from s_start that
// have a commit block are replayed in place, but for the blocks a revoke
// record of the same or a later committed transaction names.

import "fmt"

// logTag is one logged block: the device block it belongs to, where it
// is in the log, and its tag.
type logTag struct {
	blk   uint64
	pos   uint64 // log block
	tid   uint32
	esc   bool
	tag   []byte // the tag's bytes, for its checksum
	flags uint32
}

// Recover replays the committed transactions of the log into the device
// and marks the log empty: the superblock gets s_start 0 and s_sequence
// one past the last transaction found (jbd2_journal_recover's
// ++end_transaction). Every logged block must lie below limit, the
// device's size in blocks; a log that names one outside is refused
// before anything is written. It returns how many transactions it
// replayed. A log that is empty is not written.
//
// The scan stops at the first block that is not the next expected one:
// a block without the jbd2 magic or with another sequence number, or a
// commit block failing its checksum (that transaction is not replayed).
// A descriptor or revoke block failing its checksum is decided at its
// transaction's commit block, as do_one_pass's need_check_commit_time
// does: a commit no newer than the last good one marks stale blocks of an
// older log (the scan ends there, and recovery succeeds); a newer one is
// a corrupt transaction, and Recover fails with a *CorruptError (the
// kernel's "journal recovery failed") before writing anything. A logged
// block failing its tag's checksum makes Recover fail with a
// *CorruptError (EBADMSG, the kernel's -EFSBADCRC) before writing
// anything, where the kernel writes the other blocks first. Errors: the device's; a
// *CorruptError for a malformed revoke block or a block outside the
// device.
func (j *Journal) Recover(limit uint64) (int, error) {
	start := uint64(j.Start())
	if start == 0 {
		return 0, nil
	}
	if start < uint64(j.first) || start >= uint64(j.maxlen) {
		return 0, corrupt("log start %d outside [%d, %d)", start, j.first, j.maxlen)
	}
	bs := j.bs
	tail := 0
	if j.csum != 0 {
		tail = 4
	}
	next := func(p uint64) uint64 {
		if p++; p >= uint64(j.maxlen) {
			p = uint64(j.first)
		}
		return p
	}
	buf := make([]byte, bs)
	var tags []logTag // tags of the transaction being read
	var replay []logTag
	revoked := map[uint64]uint32{} // block -> latest transaction revoking it
	var pending map[uint64]uint32  // the current transaction's revokes
	pos, seq := start, j.seq
	txns := 0
	// checkTime is need_check_commit_time: a descriptor or revoke block
	// of this transaction failed its checksum. lastCommit is the commit
	// time (seconds) of the last transaction found.
	checkTime := false
	var lastCommit uint64
scan:
	for steps := uint32(0); steps < j.maxlen; steps++ {
		if err := j.readBlock(pos, buf); err != nil {
			return 0, err
		}
		if be.Uint32(buf) != magic || be.Uint32(buf[8:]) != seq {
			break
		}
		switch be.Uint32(buf[4:]) {
		case typeDescriptor:
			if tail != 0 && crc32c(j.seed, withZero(buf, bs-4, 4)) != be.Uint32(buf[bs-4:]) {
				checkTime = true // its tags are still read, to skip its blocks (count_tags)
			}
			dpos := pos
			for off := 12; off+j.tagSize <= bs-tail; {
				t := buf[off:]
				blk := uint64(be.Uint32(t))
				var flags uint32
				if j.csum == 3 {
					flags = be.Uint32(t[4:])
				} else {
					flags = uint32(be.Uint16(t[6:]))
				}
				if j.incompat&Incompat64bit != 0 {
					blk |= uint64(be.Uint32(t[8:])) << 32
				}
				dpos = next(dpos)
				tags = append(tags, logTag{blk: blk, pos: dpos, tid: seq, esc: flags&flagEscape != 0,
					tag: append([]byte(nil), t[:j.tagSize]...), flags: flags})
				off += j.tagSize
				if flags&flagSameUUID == 0 {
					off += 16
				}
				if flags&flagLastTag != 0 {
					break
				}
			}
			pos = dpos
		case typeCommit:
			commitTime := be.Uint64(buf[0x30:]) // h_commit_sec
			if checkTime {
				if commitTime >= lastCommit {
					return 0, badCsum("transaction %d: a descriptor or revoke block fails its checksum", seq)
				}
				break scan // stale blocks of an older log
			}
			if j.csum != 0 && crc32c(j.seed, withZero(buf, 0x10, 4)) != be.Uint32(buf[0x10:]) {
				break scan
			}
			lastCommit = commitTime
			replay = append(replay, tags...)
			for b, t := range pending {
				if r, ok := revoked[b]; !ok || int32(t-r) > 0 {
					revoked[b] = t
				}
			}
			tags, pending = tags[:0:0], nil
			txns++
			seq++
		case typeRevoke:
			if tail != 0 && crc32c(j.seed, withZero(buf, bs-4, 4)) != be.Uint32(buf[bs-4:]) {
				checkTime = true
			}
			count := int(be.Uint32(buf[12:]))
			if count > bs-tail {
				return 0, corrupt("revoke block at %d: r_count %d", pos, count)
			}
			rsz := 4
			if j.incompat&Incompat64bit != 0 {
				rsz = 8
			}
			if pending == nil {
				pending = map[uint64]uint32{}
			}
			for o := 16; o+rsz <= count; o += rsz {
				var b uint64
				if rsz == 8 {
					b = be.Uint64(buf[o:])
				} else {
					b = uint64(be.Uint32(buf[o:]))
				}
				pending[b] = seq
			}
		default:
			break scan
		}
		pos = next(pos)
	}
	// Check every target and every logged block's checksum before the
	// first write: a log found corrupt leaves the device untouched, for
	// e2fsck to replay as it judges (the kernel writes the good blocks
	// first, then fails the mount).
	var live []logTag
	for _, t := range replay {
		if t.blk >= limit {
			return 0, corrupt("logged block %d outside the device (%d blocks)", t.blk, limit)
		}
		if r, ok := revoked[t.blk]; ok && int32(r-t.tid) >= 0 {
			continue
		}
		if err := j.readBlock(t.pos, buf); err != nil {
			return 0, err
		}
		if !j.tagSumOK(t, buf) {
			return 0, fmt.Errorf("jbd2: recovery: %w", badCsum("logged block %d of transaction %d", t.blk, t.tid))
		}
		live = append(live, t)
	}
	for _, t := range live {
		if err := j.readBlock(t.pos, buf); err != nil {
			return 0, err
		}
		if t.esc {
			be.PutUint32(buf, magic)
		}
		if err := writeFull(j.dev, buf, int64(t.blk)*int64(bs)); err != nil {
			return 0, err
		}
	}
	if err := j.dev.Flush(); err != nil {
		return 0, err
	}
	j.seq = seq + 1
	if err := j.WriteSuper(0); err != nil {
		return 0, err
	}
	return txns, nil
}

// tagSumOK is jbd2_block_tag_csum_verify: data is the logged block as
// the log holds it (escaped).
func (j *Journal) tagSumOK(t logTag, data []byte) bool {
	if j.csum == 0 {
		return true
	}
	sum := crc32c(crc32cBE32(j.seed, t.tid), data)
	if j.csum == 3 {
		return be.Uint32(t.tag[12:]) == sum
	}
	return be.Uint16(t.tag[4:]) == uint16(sum)
}
