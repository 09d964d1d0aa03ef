package vfs

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// LinkProtection holds Linux's fs.protected_* settings
// (Documentation/admin-guide/sysctl/fs.rst), which a namespace applies
// to every Proc in it, as fs/namei.c does:
//
//   - Symlinks (0 or 1): with 1, a trailing symlink in a sticky,
//     world-writable directory is followed only if the caller's fsuid
//     owns it or the directory's owner owns it; EACCES otherwise
//     (may_follow_link). It binds root too.
//   - Hardlinks (0 or 1): with 1, a caller that neither owns the file
//     nor has CAP_FOWNER may link it only if it is a regular file that
//     is not set-user-ID, not executable set-group-ID, and that it may
//     read and write; EPERM otherwise (may_linkat).
//   - FIFOs and Regular (0, 1 or 2): with 1, an O_CREAT open of an
//     existing FIFO (regular file) in a sticky, world-writable directory
//     that neither the caller's fsuid nor the directory's owner owns
//     gives EACCES; with 2, in a sticky group-writable directory too
//     (may_create_in_sticky). Other file types are refused there
//     whatever the settings, as Linux refuses them.
//
// The zero value is the kernel's built-in default (every protection off);
// distributions usually set Symlinks and Hardlinks to 1 at boot.
type LinkProtection struct {
	Symlinks  int
	Hardlinks int
	FIFOs     int
	Regular   int
}

// valid reports whether every setting is in the range its sysctl takes.
func (lp LinkProtection) valid() bool {
	return uint(lp.Symlinks) <= 1 && uint(lp.Hardlinks) <= 1 && uint(lp.FIFOs) <= 2 && uint(lp.Regular) <= 2
}

// protection is a namespace's LinkProtection: a value, or a function
// that reads it each time a rule needs it (the host's settings, for an
// export). A private mount namespace shares its origin's, as the sysctls
// are not per mount namespace on Linux.
type protection struct {
	v   atomic.Pointer[LinkProtection]
	src atomic.Pointer[func() LinkProtection]
}

func (ns *Namespace) prot() *protection {
	if ns.protect == nil {
		return &noProtection
	}
	return ns.protect
}

// noProtection is the protection of a Namespace not made by NewNamespace.
var noProtection protection

// load returns the settings in force now.
func (p *protection) load() LinkProtection {
	if f := p.src.Load(); f != nil {
		return (*f)()
	}
	if v := p.v.Load(); v != nil {
		return *v
	}
	return LinkProtection{}
}

// SetLinkProtection sets the namespace's fs.protected_* settings, as
// writing /proc/sys/fs/protected_* does, and drops a function set by
// SetLinkProtectionFunc. A value out of its sysctl's range gives EINVAL
// and changes nothing.
func (ns *Namespace) SetLinkProtection(lp LinkProtection) error {
	if !lp.valid() || ns.protect == nil {
		return errEINVAL
	}
	ns.protect.v.Store(&lp)
	ns.protect.src.Store(nil)
	return nil
}

// SetLinkProtectionFunc makes f the source of the namespace's settings:
// it is called, from any goroutine, each time a rule reaches the point
// where Linux reads the sysctl (rarely: a link by a caller that does not
// own the file, a trailing symlink or an O_CREAT open of another user's
// file in a sticky directory). A setting out of range counts as its
// highest value. A nil f goes back to the last SetLinkProtection value.
func (ns *Namespace) SetLinkProtectionFunc(f func() LinkProtection) {
	if ns.protect == nil {
		return
	}
	if f == nil {
		ns.protect.src.Store(nil)
		return
	}
	ns.protect.src.Store(&f)
}

// LinkProtection returns the namespace's settings now.
func (ns *Namespace) LinkProtection() LinkProtection {
	return ns.prot().load()
}

// mayFollowLink is may_follow_link, for a trailing symlink link found in
// dir.
func (c *creds) mayFollowLink(ns *Namespace, dir, link location) error {
	dmode, duid, _, err := nodeAttrs(dir.node)
	if err != nil {
		return err
	}
	if dmode&(unix.S_ISVTX|0o002) != unix.S_ISVTX|0o002 {
		return nil
	}
	_, uid, _, err := nodeAttrs(link.node)
	if err != nil {
		return err
	}
	if uid == c.fsuid || uid == duid {
		return nil
	}
	if ns.prot().load().Symlinks == 0 {
		return nil
	}
	return unix.EACCES
}

// mayCreateInSticky is may_create_in_sticky, for an O_CREAT open of n,
// which exists in dir.
func (c *creds) mayCreateInSticky(ns *Namespace, dir location, n Node) error {
	dmode, duid, _, err := nodeAttrs(dir.node)
	if err != nil {
		return err
	}
	if dmode&unix.S_ISVTX == 0 {
		return nil
	}
	mode, uid, _, err := nodeAttrs(n)
	if err != nil {
		return err
	}
	if uid == duid || uid == c.fsuid {
		return nil
	}
	typ := mode & unix.S_IFMT
	level := 1 // other types: refused in a world-writable directory only
	if typ == unix.S_IFREG || typ == unix.S_IFIFO {
		lp := ns.prot().load()
		level = lp.Regular
		if typ == unix.S_IFIFO {
			level = lp.FIFOs
		}
		if level == 0 {
			return nil
		}
	}
	if dmode&0o002 != 0 || dmode&0o020 != 0 && level >= 2 {
		return unix.EACCES
	}
	return nil
}
