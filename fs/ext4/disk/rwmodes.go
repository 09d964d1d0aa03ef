package disk

// The data= and errors= modes of a read-write mount.

import (
	"encoding/binary"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/iovfs/iovfs/fs/jbd2"
)

// DataMode is the data= mount option: how file data relates to the
// journal.
type DataMode int

const (
	// DataOrdered: file data is written in place before the transaction
	// whose metadata points at it commits (the default).
	DataOrdered DataMode = iota
	// DataJournal: file data blocks are logged in the transaction with
	// the metadata and checkpointed with it, so a crash never shows a
	// block of a committed write torn or stale.
	DataJournal
	// DataWriteback is accepted and runs as DataOrdered (a stronger
	// ordering than writeback promises).
	DataWriteback
)

// ErrorBehavior is the errors= mount option, with the values of the
// superblock's s_errors (EXT4_ERRORS_*).
type ErrorBehavior uint16

const (
	// ErrorsDefault takes the behaviour from the superblock's s_errors
	// (mke2fs writes continue).
	ErrorsDefault ErrorBehavior = 0
	// ErrorsContinue records the error in the superblock, through the
	// running transaction, and goes on.
	ErrorsContinue ErrorBehavior = 1
	// ErrorsRemountRO drops the running transaction, records the error
	// in the superblock in place and refuses every later change (EROFS).
	ErrorsRemountRO ErrorBehavior = 2
	// ErrorsPanic behaves as ErrorsRemountRO: a library does not stop
	// its process; the error is logged as a panic would report it.
	ErrorsPanic ErrorBehavior = 3
)

// Superblock fields of the error record (struct ext4_super_block).
const (
	sbState            = 0x3A
	sbErrors           = 0x3C
	sbErrorCount       = 0x194
	sbFirstErrorTime   = 0x198
	sbFirstErrorIno    = 0x19C
	sbFirstErrorBlock  = 0x1A0
	sbFirstErrorFunc   = 0x1A8
	sbFirstErrorLine   = 0x1C8
	sbLastErrorTime    = 0x1CC
	sbLastErrorIno     = 0x1D0
	sbLastErrorLine    = 0x1D4
	sbLastErrorBlock   = 0x1D8
	sbLastErrorFunc    = 0x1E0
	sbFirstErrorTimeHi = 0x278
	sbLastErrorTimeHi  = 0x279
	sbFirstErrcode     = 0x27A
	sbLastErrcode      = 0x27B

	stateErrorFS = 0x2 // EXT4_ERROR_FS
)

// errcode is ext4_errno_to_code for the errors the Writer records.
func errcode(e syscall.Errno) byte {
	switch e {
	case syscall.EIO:
		return 2
	case syscall.EBADMSG: // EFSBADCRC
		return 4
	case syscall.EUCLEAN: // EFSCORRUPTED
		return 5
	}
	return 1 // EXT4_ERR_UNKNOWN
}

// recordError adds one error to the superblock sb as ext4_update_super
// copies save_error_info's record: ERROR_FS in s_state, the count, the
// first error's fields if none is recorded, the last error's always. The
// function field is the kernel function that would report it (errorFunc)
// and the line is 0.
func recordError(sb []byte, ce *CorruptError, op string, now time.Time) {
	le := binary.LittleEndian
	le.PutUint16(sb[sbState:], le.Uint16(sb[sbState:])|stateErrorFS)
	set := func(timeOff, hiOff, inoOff, blkOff, funcOff, lineOff, codeOff int) {
		setTstamp(sb, timeOff, hiOff, now.Unix()) // rwsuper.go
		le.PutUint32(sb[inoOff:], ce.Ino)
		le.PutUint64(sb[blkOff:], 0)
		f := sb[funcOff : funcOff+32]
		clear(f)
		copy(f[:31], op)
		le.PutUint32(sb[lineOff:], 0)
		sb[codeOff] = errcode(ce.Errno)
	}
	if le.Uint32(sb[sbFirstErrorTime:]) == 0 && sb[sbFirstErrorTimeHi] == 0 {
		set(sbFirstErrorTime, sbFirstErrorTimeHi, sbFirstErrorIno, sbFirstErrorBlock, sbFirstErrorFunc, sbFirstErrorLine, sbFirstErrcode)
	}
	set(sbLastErrorTime, sbLastErrorTimeHi, sbLastErrorIno, sbLastErrorBlock, sbLastErrorFunc, sbLastErrorLine, sbLastErrcode)
	le.PutUint32(sb[sbErrorCount:], le.Uint32(sb[sbErrorCount:])+1)
}

// errorBehavior is the errors= behaviour in force: w.Errors, or the
// superblock's s_errors when that is ErrorsDefault (an unknown value is
// continue, as the kernel's default).
func (w *Writer) errorBehavior() ErrorBehavior {
	if w.Errors != ErrorsDefault {
		return w.Errors
	}
	switch e := ErrorBehavior(le16(w.sb, sbErrors)); e {
	case ErrorsRemountRO, ErrorsPanic:
		return e
	}
	return ErrorsContinue
}

// ReportError handles damage found while serving operation op (the name
// recorded in the superblock), as ext4_error does; err that is not a
// *CorruptError is ignored. With errors=continue the error is recorded
// in the superblock through the running transaction and the Writer goes
// on. With errors=remount-ro (and errors=panic, which a library cannot
// honour by stopping its process) the running transaction is dropped,
// as an aborted journal's: nothing more reaches the device but the
// committed superblock with the error recorded and the journal
// superblock with s_errno -EIO (jbd2_journal_abort), written in place;
// every later change gives EROFS and Close writes nothing.
// needs_recovery stays set, as after the kernel's abort.
//
// The read-write mount (rwmount.go) reports every *CorruptError its
// nodes get from the Writer; a program using the Writer directly calls
// ReportError itself.
func (w *Writer) ReportError(op string, err error) {
	ce := corruptErr(err)
	if ce == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.err != nil {
		return
	}
	now := w.Now()
	op = errorFunc(op, ce)
	mode := w.errorBehavior()
	w.v.opt.Logf("ext4: error: %s: %v", op, ce)
	if mode == ErrorsContinue {
		recordError(w.sb, ce, op, now)
		if err := w.writeSuper(); err == nil && !w.Batch {
			w.commitOrFail()
		}
		return
	}
	if mode == ErrorsPanic {
		w.v.opt.Logf("ext4: errors=panic: not stopping the process; remounting read-only instead")
	}
	w.v.opt.Logf("ext4: Remounting filesystem read-only")
	w.err = fmt.Errorf("ext4: remounted read-only after an error (%v): %w", ce, syscall.EROFS)
	w.errorsRO = true
	// The committed superblock, not the running transaction's.
	sb := make([]byte, sbSize)
	if err := readFull(w.jdev, sb, sbOffset); err != nil {
		return
	}
	recordError(sb, ce, op, now)
	w.updateSuper(sb) // s_wtime, s_kbytes_written (rwsuper.go)
	if w.v.rocompat&rocompatMetadataCsum != 0 {
		binary.LittleEndian.PutUint32(sb[0x3FC:], crc32c(^uint32(0), sb[:0x3FC]))
	}
	if w.rawWrite(sb, sbOffset) != nil {
		return
	}
	if w.j != nil {
		w.j.Abort(-int32(syscall.EIO)) // jbd2_journal_abort's s_errno
		return
	}
	w.jdev.Flush()
}

// corruptErr is the *CorruptError in err's chain, or nil: errors.As
// without the allocation its target costs, as ReportError sees every
// error a mount's node gets (ENOENT from each lookup of a new name).
func corruptErr(err error) *CorruptError {
	for err != nil {
		if ce, ok := err.(*CorruptError); ok {
			return ce
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return nil
		}
		err = u.Unwrap()
	}
	return nil
}

// errorFunc is the kernel function whose name ext4_error records for
// damage ce found while serving op: a directory block read on the way to
// a name (every operation but readdir looks the name up first) is
// reported by __ext4_find_entry; anything else by the operation (an
// inode by its caller, as __ext4_iget is given it).
func errorFunc(op string, ce *CorruptError) string {
	if op != "ext4_readdir" && (strings.HasPrefix(ce.What, "directory block") || strings.HasPrefix(ce.What, "htree node")) {
		return "__ext4_find_entry"
	}
	return op
}

// clearJournalErr is ext4_clear_journal_err at open: a journal whose
// s_errno an earlier abort set marks the volume ERROR_FS ("Filesystem
// error recorded from previous mount") and has s_errno cleared; the
// caller writes both superblocks.
func clearJournalErr(sb []byte, j *jbd2.Journal, logf func(string, ...any)) {
	if j == nil || j.Errno() == 0 {
		return
	}
	logf("ext4: Filesystem error recorded from previous mount: errno %d; marking fs in need of filesystem check", j.Errno())
	binary.LittleEndian.PutUint16(sb[sbState:], le16(sb, sbState)|stateErrorFS)
	j.SetErrno(0)
}
