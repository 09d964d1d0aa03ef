package vfs

// Hooks for the pipe tests.

// SetPipeCapable replaces the CAP_SYS_RESOURCE check of F_SETPIPE_SZ and
// returns a function that restores it.
func SetPipeCapable(capable bool) (restore func()) {
	old := pipeCapable
	pipeCapable = func(*Proc) bool { return capable }
	return func() { pipeCapable = old }
}
