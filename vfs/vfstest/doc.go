// Package vfstest is a conformance suite for iovfs file systems, as
// testing/fstest is for io/fs and go-fuse's posixtest for FUSE servers.
//
// A driver's test calls Run with a function that makes a fresh instance
// of its file system and the capabilities it claims:
//
//	func TestVFS(t *testing.T) {
//		vfstest.Run(t, func(t *testing.T) vfs.FileSystem { return tmpfs.New(tmpfs.Options{}) },
//			vfstest.Caps{Files: true, Dirs: true, Rename: true, ...})
//	}
//
// Each case mounts a new instance as the root of a new namespace and acts
// on it through a root process and an unprivileged one (uid and gid
// 1000), so that what it checks is what programs see: the VFS's own rules
// and the driver's answers together. The expected results are Linux's
// (errno for errno); the cases name the rule they check. Capabilities a
// file system does not claim are checked too: the operation must fail as
// Linux fails it for a file system without it (EPERM, or EINVAL for a
// rename flag).
//
// Besides single calls, Run checks the namespace under concurrency:
// creates, links, unlinks, renames and removals from several goroutines
// in shared directories, after which every listing, link count and ".."
// must agree (run the test with -race), and the openat2 confinement race
// of RaceConfinement.
package vfstest
