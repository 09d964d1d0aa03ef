package vfs

import (
	"testing"

	"golang.org/x/sys/unix"
)

// permNode is a node with fixed attributes.
type permNode struct{ mode, uid, gid uint32 }

func (n permNode) Stat() (Stat, error) { return Stat{Mode: n.mode, Uid: n.uid, Gid: n.gid}, nil }

// TestGenericPermission checks generic_permission's classes and overrides
// case by case, as fs/namei.c decides them.
func TestGenericPermission(t *testing.T) {
	user := newCreds(1000, 1000, []uint32{1001, 1001, 1002})
	root := rootCreds
	cases := []struct {
		c              *creds
		mode, uid, gid uint32
		mask           int
		want           error
		why            string
	}{
		{user, unix.S_IFREG | 0o604, 0, 1001, MayRead, errEACCES, "group denies what other allows"},
		{user, unix.S_IFREG | 0o604, 0, 3000, MayRead, nil, "other allows"},
		{user, unix.S_IFREG | 0o064, 1000, 1001, MayRead, errEACCES, "owner denies what group allows"},
		{user, unix.S_IFREG | 0o640, 0, 1002, MayRead, nil, "a supplementary group"},
		{user, unix.S_IFREG | 0o640, 0, 1002, MayWrite, errEACCES, "group without w"},
		{user, unix.S_IFDIR | 0o706, 0, 1002, MayExec, errEACCES, "group may not search"},
		{root, unix.S_IFREG /* | 0o000 */, 1000, 1000, MayRead | MayWrite, nil, "CAP_DAC_OVERRIDE reads and writes"},
		{root, unix.S_IFDIR /* | 0o000 */, 1000, 1000, MayExec, nil, "CAP_DAC_OVERRIDE searches"},
		{root, unix.S_IFREG | 0o644, 1000, 1000, MayExec, errEACCES, "no x bit: root may not execute"},
		{root, unix.S_IFREG | 0o001, 1000, 1000, MayExec, nil, "some x bit: root may execute"},
	}
	for _, c := range cases {
		if got := c.c.generic(nil, c.mode, c.uid, c.gid, c.mask); got != c.want {
			t.Errorf("%s: %v, want %v", c.why, got, c.want)
		}
	}
}

// TestXattrPermission checks xattr_permission's namespace rules.
func TestXattrPermission(t *testing.T) {
	p := &Proc{}
	p.cred.Store(newCreds(1000, 1000, nil))
	loc := func(mode, uid uint32) location { return location{node: permNode{mode, uid, 0}} }
	cases := []struct {
		l    location
		name string
		mask int
		want error
	}{
		{loc(unix.S_IFREG|0o644, 0), "trusted.x", MayRead, unix.ENODATA},
		{loc(unix.S_IFREG|0o666, 0), "trusted.x", MayWrite, errEPERM},
		{loc(unix.S_IFLNK|0o777, 1000), "user.x", MayRead, unix.ENODATA},
		{loc(unix.S_IFCHR|0o666, 1000), "user.x", MayWrite, errEPERM},
		{loc(unix.S_IFDIR|0o1777, 0), "user.x", MayWrite, errEPERM},
		{loc(unix.S_IFDIR|0o1777, 1000), "user.x", MayWrite, nil},
		{loc(unix.S_IFREG|0o600, 0), "user.x", MayRead, errEACCES},
		// cap_inode_setxattr: writing security.* needs CAP_SYS_ADMIN.
		{loc(unix.S_IFREG /* |0o000 */, 0), "security.x", MayWrite, errEPERM},
		{loc(unix.S_IFREG /* |0o000 */, 0), "security.x", MayRead, nil},
	}
	for _, c := range cases {
		if got := p.xattrPermission(c.l.mnt, c.l.node, c.name, c.mask&MayWrite != 0); got != c.want {
			st, _ := c.l.node.Stat()
			t.Errorf("%s mask %d on mode %#o uid %d: %v, want %v", c.name, c.mask, st.Mode, st.Uid, got, c.want)
		}
	}
}
