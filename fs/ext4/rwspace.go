package ext4

import (
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"github.com/iovfs/iovfs/vfs"
)

// callerOf is the Caller of an operation run for c.
func callerOf(c vfs.Cred) disk.Caller {
	return disk.Caller{Uid: c.Uid, Gid: c.Gid, Groups: c.Groups, NoSysResource: !c.Capable, SysResource: c.Capable}
}
