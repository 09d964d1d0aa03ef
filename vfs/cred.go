package vfs

// Credentials (Linux kernel/sys.c, include/linux/cred.h). A process's
// credentials are one immutable creds value, replaced whole by the set*id
// calls, as Linux replaces current->cred: a system call loads the pointer
// once and sees one consistent set of ids for its whole duration.
//
// Capabilities are not modelled one by one: a process has every capability
// when its effective uid is 0 and none otherwise, which is what Linux's
// setuid rules give a process without file capabilities or securebits
// (cap_emulate_setxuid clears the effective set when euid leaves 0). File
// checks use the fsuid instead (cap_task_fix_setuid clears the file
// capabilities when fsuid leaves 0), and Access without AT_EACCESS the
// real uid (access_override_creds).

import (
	"slices"

	"golang.org/x/sys/unix"
)

// maxGroups is NGROUPS_MAX.
const maxGroups = 65536

// creds is one set of process credentials; it is never changed once
// published in Proc.cred.
type creds struct {
	ruid, euid, suid, fsuid uint32
	rgid, egid, sgid, fsgid uint32
	// groups are the supplementary groups, sorted (duplicates are kept,
	// as Linux's groups_sort keeps them).
	groups []uint32
}

var rootCreds = &creds{}

// newCreds returns the credentials of a process whose ids are all uid and
// gid, with supplementary groups groups.
func newCreds(uid, gid uint32, groups []uint32) *creds {
	g := slices.Clone(groups)
	slices.Sort(g)
	return &creds{uid, uid, uid, uid, gid, gid, gid, gid, g}
}

// capable reports whether the process has the capabilities that Linux
// checks with capable(): in this model, whether euid is 0.
func (c *creds) capable() bool { return c.euid == 0 }

// fsCapable reports whether the process has the file capabilities
// (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, CAP_CHOWN,
// CAP_FSETID): in this model, whether fsuid is 0.
func (c *creds) fsCapable() bool { return c.fsuid == 0 }

// inGroup is Linux's in_group_p: gid is the fsgid or a supplementary group.
func (c *creds) inGroup(gid uint32) bool {
	if gid == c.fsgid {
		return true
	}
	_, ok := slices.BinarySearch(c.groups, gid)
	return ok
}

// fsCred is the Cred of operations: the fsuid and fsgid new files get,
// the groups and the capabilities.
func (c *creds) fsCred() Cred {
	return Cred{Uid: c.fsuid, Gid: c.fsgid, Groups: c.groups, Capable: c.capable()}
}

// NewProcCred is NewProc for a process whose real, effective, saved and
// file-system ids are uid and gid, with the supplementary groups groups.
// A process with uid 0 has every capability; any other is unprivileged.
func NewProcCred(ns *Namespace, uid, gid int, groups ...int) *Proc {
	p := NewProc(ns)
	g := make([]uint32, len(groups))
	for i, x := range groups {
		g[i] = uint32(x)
	}
	p.cred.Store(newCreds(uint32(uid), uint32(gid), g))
	return p
}

// Privileged reports whether the process has the capabilities that
// privileged operations need (CAP_SYS_ADMIN, CAP_MKNOD...): in iovfs's
// model, whether its effective uid is 0. Drivers ask it for requests that
// Linux allows only with a capability.
func (p *Proc) Privileged() bool { return p.cred.Load().capable() }

// Getuid returns the real user id, as getuid(2) does.
func (p *Proc) Getuid() int { return int(p.cred.Load().ruid) }

// Geteuid returns the effective user id, as geteuid(2) does.
func (p *Proc) Geteuid() int { return int(p.cred.Load().euid) }

// Getgid returns the real group id, as getgid(2) does.
func (p *Proc) Getgid() int { return int(p.cred.Load().rgid) }

// Getegid returns the effective group id, as getegid(2) does.
func (p *Proc) Getegid() int { return int(p.cred.Load().egid) }

// Getresuid returns the real, effective and saved user ids.
func (p *Proc) Getresuid() (ruid, euid, suid int) {
	c := p.cred.Load()
	return int(c.ruid), int(c.euid), int(c.suid)
}

// Getresgid returns the real, effective and saved group ids.
func (p *Proc) Getresgid() (rgid, egid, sgid int) {
	c := p.cred.Load()
	return int(c.rgid), int(c.egid), int(c.sgid)
}

// Getgroups returns the supplementary group ids, sorted, as getgroups(2)
// does (Linux keeps them sorted too).
func (p *Proc) Getgroups() []int {
	c := p.cred.Load()
	out := make([]int, len(c.groups))
	for i, g := range c.groups {
		out[i] = int(g)
	}
	return out
}

// idArg converts a set*id argument: -1 means "leave alone"; other values
// outside uint32, and (uid_t)-1 itself, give EINVAL, as make_kuid's
// invalid ids do.
func idArg(id int) (uint32, bool, error) {
	if id == -1 {
		return 0, false, nil
	}
	if id < 0 || id >= 1<<32-1 {
		return 0, false, errEINVAL
	}
	return uint32(id), true, nil
}

// Setresuid sets the real, effective and saved user ids, as setresuid(2)
// does; -1 leaves an id unchanged. A process with CAP_SETUID (euid 0) may
// set any ids; another may set each only to one of its current real,
// effective and saved uids, or gets EPERM and nothing changes. The fsuid
// follows the new euid. Leaving euid 0 drops every capability.
func (p *Proc) Setresuid(ruid, euid, suid int) error {
	return p.setres(ruid, euid, suid, func(c *creds) (r, e, s, fs *uint32) {
		return &c.ruid, &c.euid, &c.suid, &c.fsuid
	})
}

// Setresgid sets the real, effective and saved group ids, as setresgid(2)
// does, with Setresuid's rules (CAP_SETGID is euid 0). The fsgid follows
// the new egid.
func (p *Proc) Setresgid(rgid, egid, sgid int) error {
	return p.setres(rgid, egid, sgid, func(c *creds) (r, e, s, fs *uint32) {
		return &c.rgid, &c.egid, &c.sgid, &c.fsgid
	})
}

// setres is setresuid and setresgid: ids picks the real, effective, saved
// and file-system id of one kind out of a creds value. The new creds
// replace the old ones whole, with a compare-and-swap.
func (p *Proc) setres(real, eff, saved int, ids func(*creds) (r, e, s, fs *uint32)) error {
	var want [3]uint32
	var set [3]bool
	for i, id := range [3]int{real, eff, saved} {
		v, ok, err := idArg(id)
		if err != nil {
			return err
		}
		want[i], set[i] = v, ok
	}
	for {
		old := p.cred.Load()
		or, oe, os, _ := ids(old)
		if !old.capable() {
			for i := range want {
				if set[i] && want[i] != *or && want[i] != *oe && want[i] != *os {
					return unix.EPERM
				}
			}
		}
		c := *old
		r, e, s, fs := ids(&c)
		for i, dst := range [3]*uint32{r, e, s} {
			if set[i] {
				*dst = want[i]
			}
		}
		*fs = *e
		if p.cred.CompareAndSwap(old, &c) {
			return nil
		}
	}
}

// Setgroups sets the supplementary group ids, as setgroups(2) does: it
// needs CAP_SETGID (EPERM otherwise); more than NGROUPS_MAX ids, or an id
// outside uint32, give EINVAL.
func (p *Proc) Setgroups(gids []int) error {
	if len(gids) > maxGroups {
		return errEINVAL
	}
	g := make([]uint32, len(gids))
	for i, x := range gids {
		id, set, err := idArg(x)
		if err != nil || !set {
			return errEINVAL
		}
		g[i] = id
	}
	slices.Sort(g)
	for {
		old := p.cred.Load()
		if !old.capable() {
			return unix.EPERM
		}
		c := *old
		c.groups = g
		if p.cred.CompareAndSwap(old, &c) {
			return nil
		}
	}
}
