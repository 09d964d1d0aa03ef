package vfstest

import "golang.org/x/sys/unix"

// The permission cases, as an unprivileged process (uid and gid 1000)
// beside root: Linux's generic_permission, may_create, may_delete and the
// sticky rule, decided by the VFS on the modes the file system keeps.

func init() {
	add(
		testCase{name: "permissions", needs: func(c Caps) bool { return c.Perms && c.Dirs && c.Files }, run: func(e *env) {
			r, u := e.root, e.user
			e.must("mkdir", r.Mkdir("/ro", 0o755))
			e.must("chmod", r.Chmod("/ro", 0o755))
			_, err := u.Open("/ro/x", unix.O_CREAT|unix.O_WRONLY, 0o644)
			e.want("create in a directory without write permission", err, unix.EACCES)
			e.want("mkdir there", u.Mkdir("/ro/d", 0o755), unix.EACCES)
			e.create(r, "/ro/secret", "s", 0o600)
			e.must("chmod", r.Chmod("/ro/secret", 0o600))
			_, err = u.Open("/ro/secret", unix.O_RDONLY, 0)
			e.want("read another user's 0600 file", err, unix.EACCES)
			e.want("unlink in a directory without write permission", u.Unlink("/ro/secret"), unix.EACCES)
			e.want("chmod another user's file", u.Chmod("/ro/secret", 0o666), unix.EPERM)
			e.must("mkdir", r.Mkdir("/closed", 0o700))
			e.must("chmod", r.Chmod("/closed", 0o700))
			e.create(r, "/closed/f", "", 0o644)
			_, err = u.Lstat("/closed/f")
			e.want("a path through a directory without search permission", err, unix.EACCES)
			// A world-writable sticky directory: anyone may create, only
			// the owner (of the file or the directory) may remove.
			e.must("mkdir", r.Mkdir("/tmp", 0o777))
			e.must("chmod", r.Chmod("/tmp", 0o1777))
			e.create(r, "/tmp/roots", "", 0o666)
			e.create(u, "/tmp/mine", "", 0o644)
			e.want("unlink another user's file in a sticky directory", u.Unlink("/tmp/roots"), unix.EPERM)
			if e.caps.Rename {
				e.want("rename it away", u.Rename("/tmp/roots", "/tmp/x"), unix.EPERM)
			}
			if e.caps.Owners { // the file is the user's own
				e.must("unlink one's own file in a sticky directory", u.Unlink("/tmp/mine"))
			}
		}},
		testCase{name: "owners", needs: func(c Caps) bool { return c.Owners && c.Perms && c.Dirs && c.Files }, run: func(e *env) {
			r, u := e.root, e.user
			e.must("mkdir", r.Mkdir("/w", 0o777))
			e.must("chmod", r.Chmod("/w", 0o777))
			e.create(u, "/w/f", "", 0o644)
			if st := e.lstat(r, "/w/f"); st.Uid != 1000 || st.Gid != 1000 {
				e.t.Errorf("a file created by uid 1000: owner %d:%d, want 1000:1000", st.Uid, st.Gid)
			}
			e.must("chmod of one's own file", u.Chmod("/w/f", 0o600))
			e.want("chown to another user", u.Chown("/w/f", 0, 1000), unix.EPERM)
			e.want("chgrp to a group one is not in", u.Chown("/w/f", 1000, 0), unix.EPERM)
			e.must("root's chown", r.Chown("/w/f", 2000, 2000))
			if st := e.lstat(r, "/w/f"); st.Uid != 2000 || st.Gid != 2000 {
				e.t.Errorf("after chown 2000:2000: %d:%d", st.Uid, st.Gid)
			}
		}},
		testCase{name: "set-group-ID directories", needs: func(c Caps) bool { return c.SetgidDirs && c.Owners && c.Dirs && c.Files }, run: func(e *env) {
			r, u := e.root, e.user
			e.must("mkdir", r.Mkdir("/g", 0o777))
			e.must("chown", r.Chown("/g", 0, 5000))
			e.must("chmod", r.Chmod("/g", 0o2777))
			e.create(u, "/g/f", "", 0o644)
			e.must("mkdir", u.Mkdir("/g/d", 0o755))
			f, d := e.lstat(r, "/g/f"), e.lstat(r, "/g/d")
			if f.Gid != 5000 || d.Gid != 5000 || d.Mode&unix.S_ISGID == 0 {
				e.t.Errorf("in a set-group-ID directory of group 5000: file gid %d, directory gid %d mode %o; want 5000, 5000 and S_ISGID", f.Gid, d.Gid, d.Mode)
			}
		}},
	)
}
