// Package ext4 is iovfs's ext2, ext3 and ext4 driver: the VFS glue over
// the on-disk layer (fs/ext4/disk) and its journal (fs/jbd2), as Linux's
// fs/ext4 sits on fs/jbd2. It registers the types ext4, ext3 and ext2
// (Mount, MountType), parses the mount options, replays a journal and
// cleans orphans before a read-only mount, and serves the volume's nodes,
// open files and directories, statfs, and dax (file data copied straight
// from a device that can be mapped).
//
// A read-only mount serves a disk.Volume (mount.go, node.go, file.go); a
// read-write one a disk.Writer (rwmount.go). Every change goes through
// the Writer; every error that damage causes goes through the Writer's
// error reporter (errors= behaviour).
//
// The layers import downward only: fs/jbd2 imports nothing of iovfs,
// fs/ext4/disk imports fs/jbd2 and the block layer but not vfs, and this
// package imports all three (TestLayers checks it with go list).
package ext4
