package vfs

// close_range(2) and the descriptor half of execve(2): closing many
// descriptors without knowing which are open, as a process's exit and
// exec do.

import "golang.org/x/sys/unix"

// CloseRange closes the descriptors from first to last inclusive that are
// open, as close_range(2) does; last may be past the table (^uint(0) for
// all). With unix.CLOSE_RANGE_CLOEXEC it sets their FD_CLOEXEC bit instead.
// first > last, or any other flag, gives EINVAL (CLOSE_RANGE_UNSHARE is
// not supported: a Proc shares its table only with its threads). Errors
// of the closes themselves are not reported, as Linux ignores them.
func (p *Proc) CloseRange(first, last uint, flags int) error {
	if first > last || flags&^unix.CLOSE_RANGE_CLOEXEC != 0 {
		return errEINVAL
	}
	for _, f := range p.files.removeRange(first, last, flags&unix.CLOSE_RANGE_CLOEXEC != 0, false) {
		p.closeFile(f)
	}
	return nil
}

// CloseOnExec closes every descriptor whose FD_CLOEXEC bit is set, as
// execve(2) does before the new program runs (do_close_on_exec).
func (p *Proc) CloseOnExec() {
	for _, f := range p.files.removeRange(0, ^uint(0), false, true) {
		p.closeFile(f)
	}
}

// removeRange empties the open descriptors from first to last (only those
// with FD_CLOEXEC when onlyCloexec) and returns their files, to be closed
// without the table's lock; with cloexec it sets their FD_CLOEXEC bit and
// removes nothing.
func (t *fdTable) removeRange(first, last uint, cloexec, onlyCloexec bool) []*file {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := *t.slots.Load()
	var out []*file
	for fd := first; fd < uint(len(s)) && fd <= last; fd++ {
		if s[fd].Load() == nil || onlyCloexec && !t.getCloexec(int(fd)) {
			continue
		}
		if cloexec {
			t.setCloexec(int(fd), true)
			continue
		}
		out = append(out, s[fd].Swap(nil))
		t.setCloexec(int(fd), false)
		if int(fd) < t.lowest {
			t.lowest = int(fd)
		}
	}
	return out
}
