package vfs

// Inode flags, the attributes chattr(1) sets (Linux fs/file_attr.c:
// ioctl_getflags, ioctl_setflags, ioctl_fsgetxattr, ioctl_fssetxattr and
// vfs_fileattr_set). The VFS answers these ioctls for every file system
// whose nodes are FileAttrers, decides who may change what, and enforces
// the flags that restrict changes (immutable, append-only) in its own
// checks (permission.go, open.go, attr.go, xattr.go, link.go, write.go,
// fallocate.go, fcntl.go), as Linux's VFS does; the file system stores
// the flags and applies the rest (noatime, sync).

import "golang.org/x/sys/unix"

// Inode flags (FS_IOC_GETFLAGS, Linux's FS_*_FL): the ones iovfs's file
// systems know. x/sys/unix does not define them.
const (
	FS_SECRM_FL        = 0x00000001
	FS_UNRM_FL         = 0x00000002
	FS_COMPR_FL        = 0x00000004
	FS_SYNC_FL         = 0x00000008
	FS_IMMUTABLE_FL    = 0x00000010
	FS_APPEND_FL       = 0x00000020
	FS_NODUMP_FL       = 0x00000040
	FS_NOATIME_FL      = 0x00000080
	FS_ENCRYPT_FL      = 0x00000800
	FS_INDEX_FL        = 0x00001000
	FS_JOURNAL_DATA_FL = 0x00004000
	FS_NOTAIL_FL       = 0x00008000
	FS_DIRSYNC_FL      = 0x00010000
	FS_TOPDIR_FL       = 0x00020000
	FS_HUGE_FILE_FL    = 0x00040000
	FS_EXTENT_FL       = 0x00080000
	FS_VERITY_FL       = 0x00100000
	FS_EA_INODE_FL     = 0x00200000
	FS_NOCOW_FL        = 0x00800000
	FS_DAX_FL          = 0x02000000
	FS_INLINE_DATA_FL  = 0x10000000
	FS_PROJINHERIT_FL  = 0x20000000
	FS_CASEFOLD_FL     = 0x40000000

	// FS_FL_USER_VISIBLE and FS_FL_USER_MODIFIABLE are the flags
	// FS_IOC_GETFLAGS shows and FS_IOC_SETFLAGS may change, for file
	// systems that do not say otherwise.
	FS_FL_USER_VISIBLE    = 0x0003DFFF
	FS_FL_USER_MODIFIABLE = 0x000380FF

	// fsCommonFL are FS_COMMON_FL: the flags that have an xflag.
	fsCommonFL = FS_SYNC_FL | FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL | FS_DAX_FL | FS_PROJINHERIT_FL
)

// Extended inode flags (FS_IOC_FSGETXATTR, Linux's FS_XFLAG_*).
const (
	FS_XFLAG_REALTIME     = 0x00000001
	FS_XFLAG_PREALLOC     = 0x00000002
	FS_XFLAG_IMMUTABLE    = 0x00000008
	FS_XFLAG_APPEND       = 0x00000010
	FS_XFLAG_SYNC         = 0x00000020
	FS_XFLAG_NOATIME      = 0x00000040
	FS_XFLAG_NODUMP       = 0x00000080
	FS_XFLAG_RTINHERIT    = 0x00000100
	FS_XFLAG_PROJINHERIT  = 0x00000200
	FS_XFLAG_NOSYMLINKS   = 0x00000400
	FS_XFLAG_EXTSIZE      = 0x00000800
	FS_XFLAG_EXTSZINHERIT = 0x00001000
	FS_XFLAG_NODEFRAG     = 0x00002000
	FS_XFLAG_FILESTREAM   = 0x00004000
	FS_XFLAG_DAX          = 0x00008000
	FS_XFLAG_COWEXTSIZE   = 0x00010000
	FS_XFLAG_HASATTR      = 0x80000000

	// fsXflagCommon is FS_XFLAG_COMMON: the xflags that have a flag.
	fsXflagCommon = FS_XFLAG_SYNC | FS_XFLAG_IMMUTABLE | FS_XFLAG_APPEND | FS_XFLAG_NODUMP | FS_XFLAG_NOATIME | FS_XFLAG_DAX | FS_XFLAG_PROJINHERIT
	// fsXflagsMask is FS_XFLAGS_MASK, the xflags FS_IOC_FSSETXATTR knows
	// (EOPNOTSUPP for others); fsXflagRdonly those it ignores.
	fsXflagsMask  = 0x0001ffff | FS_XFLAG_HASATTR
	fsXflagRdonly = FS_XFLAG_PREALLOC | FS_XFLAG_HASATTR
)

// The ioctl requests, with their argument types: FS_IOC_GETFLAGS and
// FS_IOC_SETFLAGS take a *uint32 (or *int), FS_IOC_FSGETXATTR and
// FS_IOC_FSSETXATTR a *Fsxattr.
const (
	FS_IOC_GETFLAGS   = unix.FS_IOC_GETFLAGS
	FS_IOC_SETFLAGS   = unix.FS_IOC_SETFLAGS
	FS_IOC_FSGETXATTR = 0x801c581f
	FS_IOC_FSSETXATTR = 0x401c5820
	FS_IOC_GETVERSION = 0x80087601
)

// Fsxattr is struct fsxattr, the argument of FS_IOC_FSGETXATTR and
// FS_IOC_FSSETXATTR.
type Fsxattr struct {
	Xflags     uint32
	Extsize    uint32
	Nextents   uint32
	Projid     uint32
	Cowextsize uint32
	Pad        [8]byte
}

// FileAttr is a node's flags as both ioctl families see them (Linux's
// struct file_kattr). FlagsValid says Flags were set through
// FS_IOC_SETFLAGS, FsxValid that the fsx fields were set through
// FS_IOC_FSSETXATTR; the VFS fills in the other family from the node's
// current attributes.
type FileAttr struct {
	Flags                                 uint32 // FS_*_FL
	Xflags                                uint32 // FS_XFLAG_*
	Extsize, Nextents, Projid, Cowextsize uint32
	FlagsValid, FsxValid                  bool
}

// FillFlags sets a from flags alone (fileattr_fill_flags): the xflags
// that correspond, the rest zero.
func (a *FileAttr) FillFlags(flags uint32) {
	*a = FileAttr{Flags: flags, FlagsValid: true}
	for _, p := range flagPairs {
		if flags&p.fl != 0 {
			a.Xflags |= p.xfl
		}
	}
}

// FillXflags sets a from xflags alone (fileattr_fill_xflags).
func (a *FileAttr) FillXflags(xflags uint32) {
	*a = FileAttr{Xflags: xflags, FsxValid: true}
	for _, p := range flagPairs {
		if xflags&p.xfl != 0 {
			a.Flags |= p.fl
		}
	}
}

// HasFsx is fileattr_has_fsx: a was set through FS_IOC_FSSETXATTR with
// something a plain flag cannot say (an xflag without a flag, an extent
// size hint, a project id). File systems without those refuse it.
func (a *FileAttr) HasFsx() bool {
	return a.FsxValid && (a.Xflags&^fsXflagCommon != 0 || a.Extsize != 0 || a.Projid != 0 || a.Cowextsize != 0)
}

var flagPairs = [...]struct{ fl, xfl uint32 }{
	{FS_SYNC_FL, FS_XFLAG_SYNC},
	{FS_IMMUTABLE_FL, FS_XFLAG_IMMUTABLE},
	{FS_APPEND_FL, FS_XFLAG_APPEND},
	{FS_NODUMP_FL, FS_XFLAG_NODUMP},
	{FS_NOATIME_FL, FS_XFLAG_NOATIME},
	{FS_DAX_FL, FS_XFLAG_DAX},
	{FS_PROJINHERIT_FL, FS_XFLAG_PROJINHERIT},
}

// StatxAttrs returns the statx attributes that flags imply, for a file
// system's Stat (as generic_fillattr's callers set them).
func StatxAttrs(flags uint32) uint32 {
	var a uint32
	if flags&FS_IMMUTABLE_FL != 0 {
		a |= unix.STATX_ATTR_IMMUTABLE
	}
	if flags&FS_APPEND_FL != 0 {
		a |= unix.STATX_ATTR_APPEND
	}
	if flags&FS_NODUMP_FL != 0 {
		a |= unix.STATX_ATTR_NODUMP
	}
	if flags&FS_COMPR_FL != 0 {
		a |= unix.STATX_ATTR_COMPRESSED
	}
	if flags&FS_ENCRYPT_FL != 0 {
		a |= unix.STATX_ATTR_ENCRYPTED
	}
	if flags&FS_VERITY_FL != 0 {
		a |= unix.STATX_ATTR_VERITY
	}
	return a
}

// PermFlags returns the Perm* state bits that flags imply, for a file
// system's PermAttrs.
func PermFlags(flags uint32) uint32 {
	var b uint32
	if flags&FS_IMMUTABLE_FL != 0 {
		b |= PermImmutable
	}
	if flags&FS_APPEND_FL != 0 {
		b |= PermAppend
	}
	return b
}

// fileattrIoctl answers the inode-flag ioctls for f, opened by p, when
// its node is a FileAttrer (do_vfs_ioctl); handled is false for other
// requests and nodes, which go to the driver's Ioctler.
func (p *Proc) fileattrIoctl(f *file, req uint, arg any) (r int, err error, handled bool) {
	switch req {
	case FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR:
	default:
		return 0, nil, false
	}
	fa, ok := f.node.(FileAttrer)
	if !ok {
		return 0, nil, false
	}
	switch req {
	case FS_IOC_GETFLAGS:
		a, err := fa.GetFileAttr()
		if err != nil {
			return 0, err, true
		}
		return 0, putFlags(arg, a.Flags), true
	case FS_IOC_FSGETXATTR:
		x, ok := arg.(*Fsxattr)
		if !ok {
			return 0, errEINVAL, true
		}
		a, err := fa.GetFileAttr()
		if err != nil {
			return 0, err, true
		}
		*x = Fsxattr{Xflags: a.Xflags & fsXflagsMask, Extsize: a.Extsize, Nextents: a.Nextents, Projid: a.Projid, Cowextsize: a.Cowextsize}
		return 0, nil, true
	case FS_IOC_SETFLAGS:
		flags, err := getFlags(arg)
		if err != nil {
			return 0, err, true
		}
		var a FileAttr
		a.FillFlags(flags)
		return 0, p.setFileAttr(f, fa, a), true
	}
	x, ok := arg.(*Fsxattr)
	if !ok {
		return 0, errEINVAL, true
	}
	if x.Xflags&^fsXflagsMask != 0 {
		return 0, errEOPNOTSUP, true
	}
	var a FileAttr
	a.FillXflags(x.Xflags &^ fsXflagRdonly)
	a.Extsize, a.Nextents, a.Projid, a.Cowextsize = x.Extsize, x.Nextents, x.Projid, x.Cowextsize
	return 0, p.setFileAttr(f, fa, a), true
}

func putFlags(arg any, v uint32) error {
	switch x := arg.(type) {
	case *uint32:
		*x = v
	case *int:
		*x = int(int32(v))
	case *int32:
		*x = int32(v)
	default:
		return errEINVAL
	}
	return nil
}

func getFlags(arg any) (uint32, error) {
	switch x := arg.(type) {
	case *uint32:
		return *x, nil
	case *int:
		return uint32(*x), nil
	case *int32:
		return uint32(*x), nil
	case uint32:
		return x, nil
	case int:
		return uint32(x), nil
	}
	return 0, errEINVAL
}

// setFileAttr is ioctl_setflags and ioctl_fssetxattr from mnt_want_write
// on: EROFS, then vfs_fileattr_set: the owner or CAP_FOWNER (EPERM), the
// missing family filled in from the current attributes,
// fileattr_set_prepare's checks (CAP_LINUX_IMMUTABLE to change the
// immutable or append-only flag, EPERM; extent size hints on the wrong
// file types, EINVAL), then the file system, under the node's directory
// lock when it is a directory (Linux's inode_lock).
func (p *Proc) setFileAttr(f *file, fa FileAttrer, a FileAttr) error {
	if f.mnt != nil && f.mnt.readonly {
		return unix.EROFS
	}
	st, err := f.node.Stat()
	if err != nil {
		return err
	}
	c := p.cred.Load()
	if !c.ownerOrCapable(st.Uid) {
		return errEPERM
	}
	if st.IsDir() {
		l := p.ns.lockDir(f.node)
		defer l.unlock()
	}
	old, err := fa.GetFileAttr()
	if err != nil {
		return err
	}
	if a.FlagsValid {
		a.Xflags |= old.Xflags &^ fsXflagCommon
		a.Extsize, a.Nextents, a.Projid, a.Cowextsize = old.Extsize, old.Nextents, old.Projid, old.Cowextsize
	} else {
		a.Flags |= old.Flags &^ fsCommonFL
	}
	if (a.Flags^old.Flags)&(FS_APPEND_FL|FS_IMMUTABLE_FL) != 0 && !c.capable() {
		return errEPERM // CAP_LINUX_IMMUTABLE
	}
	typ := st.Mode & unix.S_IFMT
	if a.Xflags&FS_XFLAG_EXTSIZE != 0 && typ != unix.S_IFREG ||
		a.Xflags&FS_XFLAG_EXTSZINHERIT != 0 && typ != unix.S_IFDIR ||
		a.Xflags&FS_XFLAG_COWEXTSIZE != 0 && typ != unix.S_IFREG && typ != unix.S_IFDIR ||
		a.Xflags&FS_XFLAG_DAX != 0 && typ != unix.S_IFREG && typ != unix.S_IFDIR {
		return errEINVAL
	}
	if a.Extsize == 0 {
		a.Xflags &^= FS_XFLAG_EXTSIZE | FS_XFLAG_EXTSZINHERIT
	}
	if a.Cowextsize == 0 {
		a.Xflags &^= FS_XFLAG_COWEXTSIZE
	}
	return fa.SetFileAttr(a, c.fsCred())
}
