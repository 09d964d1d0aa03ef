package ext4

// The data= and errors= modes of a read-write mount.

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
