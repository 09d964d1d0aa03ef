package vfs

// Threads: Procs that share one descriptor table, as the threads of a
// Linux process share their files_struct. A thread has credentials of its
// own (Linux keeps cred per task), so a server that acts for many callers
// (the FUSE export) keeps its descriptors in one table and gives each
// caller's credentials a thread, as a Linux file server switches fsuid per
// thread, without copying a descriptor per request.

// NewThread returns a new thread of p's process, as clone(2) with
// CLONE_VM|CLONE_SIGHAND|CLONE_THREAD|CLONE_FILES and without CLONE_FS
// makes one. It shares p's descriptor table (a descriptor opened, closed
// or duplicated by one is the other's at once), p's process id and p's
// process-associated record locks: a lock taken through any thread
// belongs to the process, and a close through any thread drops the
// process's locks on that file (Linux's fl_owner is the files_struct).
// It starts with copies of p's credentials, current directory and umask,
// which are its own from then on: the set*id calls change the calling
// thread alone, as the raw system calls do on Linux (glibc's wrappers
// broadcast setuid to every thread; setfsuid never does). Fork of a
// thread makes a new process with a copy of the shared table.
func (p *Proc) NewThread() *Proc {
	t := &Proc{ns: p.ns, pid: p.pid, files: p.files, group: p.group}
	t.cwd.Store(p.cwd.Load())
	t.umask.Store(p.umask.Load())
	c := *p.cred.Load()
	t.cred.Store(&c)
	return t
}
