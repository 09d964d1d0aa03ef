package shell

import "github.com/iovfs/iovfs/vfs"

type procT = *vfs.Proc
