package vfs

// LockWaiters returns the number of goroutines sleeping in F_SETLKW,
// F_OFD_SETLKW or a blocking flock, so that tests can wait for a waiter
// to be asleep without timing it.
func LockWaiters() int {
	locks.mu.Lock()
	defer locks.mu.Unlock()
	n := 0
	for _, nl := range locks.nodes {
		n += nl.waiters
	}
	return n
}

// LockNodes returns the number of nodes with lock state, to check that
// state goes when the locks do.
func LockNodes() int { return int(locks.count.Load()) }
