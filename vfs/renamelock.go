package vfs

import (
	"sync"
	"sync/atomic"
)

// The rename seqlock, Linux's rename_lock (fs/dcache.c): a sequence count
// with a writer lock. Every rename and every mount-table change is a
// writer: it takes the lock, which serialises writers, and holds the count
// odd for its whole duration. A scoped walk (RESOLVE_BENEATH,
// RESOLVE_IN_ROOT) samples the count when it starts, waiting while a
// writer runs, and re-checks it at every "..": if it moved, a directory on
// the walk's path may have been moved out from under root, and the ".."
// gives EAGAIN, as Linux's handle_dots does. Without the writer lock two
// renames in flight could leave the count even and unchanged while one of
// them has a directory outside the root.

// renameLock is the writer side of the rename seqlock; its zero value is
// ready. It lives in the Namespace.
type renameLock struct {
	// seq counts writers, twice each: odd while one runs. Readers load it
	// without a lock.
	seq atomic.Uint64
	// mu serialises writers.
	mu sync.Mutex
}

// writeBegin takes the writer lock and makes the count odd.
func (l *renameLock) writeBegin() {
	l.mu.Lock()
	l.seq.Add(1)
}

// writeEnd makes the count even again and drops the writer lock.
func (l *renameLock) writeEnd() {
	l.seq.Add(1)
	l.mu.Unlock()
}

// readBegin returns an even count, waiting for the writer that holds the
// count odd, if any, to finish (read_seqbegin).
func (l *renameLock) readBegin() uint64 {
	for {
		s := l.seq.Load()
		if s&1 == 0 {
			return s
		}
		l.mu.Lock() // sleeps until the writer is done
		//lint:ignore SA2001 taking the lock is the wait: the writer holds it
		l.mu.Unlock()
	}
}

// retry reports whether a writer ran since readBegin returned s
// (read_seqretry).
func (l *renameLock) retry(s uint64) bool { return l.seq.Load() != s }
