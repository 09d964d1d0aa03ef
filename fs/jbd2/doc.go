// Package jbd2 is the journal of ext3 and ext4 on a block device, as
// Linux keeps it in fs/jbd2: a circular log of transactions, each a run
// of descriptor blocks (tags naming the device blocks that follow them),
// the logged blocks, revoke blocks and a commit block, and a journal
// superblock saying where the log starts. It knows device blocks, not
// the file system whose blocks they are.
//
// # Use
//
//	j, err := jbd2.Open(dev, blockSize, extents) // the log's blocks on dev
//	n, err := j.Recover(deviceBlocks)           // replay committed transactions
//	tx := jbd2.NewTransaction(dev, blockSize)    // metadata writes collect here
//	tx.WriteAt(b, off)                          // reads through tx see them
//	err = tx.Commit(j, time.Now())              // log, commit block, checkpoint
//
// A Transaction is the running transaction: metadata writes collect in
// it, block by block, and reads through it see them. Commit writes it to
// the log (descriptor blocks with tags, escaped blocks, a commit block,
// with the checksums of the journal's format: none, csum v2 or csum v3),
// points the journal superblock at it, writes its blocks in place (the
// checkpoint) and marks the log empty. A crash at any write leaves the
// device as it was before the transaction or with a committed
// transaction that Recover replays. Commit with a nil journal writes the
// blocks in place only (ext4 without has_journal).
//
// Recover is jbd2_journal_recover's three passes in one scan: it finds
// the transactions from s_start that have a commit block (checking the
// checksums of descriptor, revoke and commit blocks), collects the
// revoke records of committed transactions, and writes every logged
// block not revoked by the same or a later transaction in place, checked
// against its tag's checksum (a block that fails is not written, and the
// replay reports EBADMSG at the end, as the kernel's -EFSBADCRC). It reads
// 32- and 64-bit block numbers, tags of every format, escaped blocks and
// logs that wrap. Fast commits and external journals are refused with a
// *FeatureError.
//
// # Concurrency
//
// A Journal is used by one goroutine at a time (the file system's commit
// path), and so are a Transaction's ReadAt, WriteAt, Forget, Reset and
// Commit. ReadBlock may run beside them: a block is copied whole from the
// transaction, under its lock, and Commit writes a block in place before
// it lets go of it, so a reader that finds a block gone from the
// transaction and reads the device finds its new bytes there.
package jbd2
