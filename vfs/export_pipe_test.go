package vfs

// Hooks for the pipe tests, until fcntl(2) is on this branch (issue 9's
// Proc.Fcntl passes F_GETPIPE_SZ and F_SETPIPE_SZ to Fcntler and F_SETFL
// to FlagSetter; after the merge the tests can call it instead).

// PipeFcntl calls the Fcntler of fd's handle, holding a reference as
// fcntl does.
func PipeFcntl(p *Proc, fd, cmd, arg int) (int, error) {
	f := p.files.get(fd)
	if f == nil || !f.tryRef() {
		return 0, errEBADF
	}
	defer f.release()
	fc, ok := f.h.(Fcntler)
	if !ok {
		return 0, errEINVAL
	}
	return fc.Fcntl(p, cmd, arg)
}

// SetFileFlags does what F_SETFL does to the handle: it passes the new
// status flags to its FlagSetter.
func SetFileFlags(p *Proc, fd, flags int) error {
	f := p.files.get(fd)
	if f == nil || !f.tryRef() {
		return errEBADF
	}
	defer f.release()
	if fs, ok := f.h.(FlagSetter); ok {
		return fs.SetFlags(flags)
	}
	return nil
}

// SetPipeCapable replaces the CAP_SYS_RESOURCE check of F_SETPIPE_SZ and
// returns a function that restores it.
func SetPipeCapable(capable bool) (restore func()) {
	old := pipeCapable
	pipeCapable = func(*Proc) bool { return capable }
	return func() { pipeCapable = old }
}
