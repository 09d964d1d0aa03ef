package vfs

import "golang.org/x/sys/unix"

// Ioctl performs the device-specific request req on fd, as ioctl(2) does,
// and returns the request's result. arg is the request's argument as a Go
// value: x/sys/unix's own types where they exist (*unix.LoopConfig for
// LOOP_CONFIGURE, *unix.LoopInfo64 for LOOP_GET_STATUS64 and
// LOOP_SET_STATUS64, *uint64 for BLKGETSIZE64, *int for BLKSSZGET,
// *uint32 for FS_IOC_GETFLAGS and FS_IOC_SETFLAGS, *Fsxattr for
// FS_IOC_FSGETXATTR and FS_IOC_FSSETXATTR), and an int where Linux passes
// an integer (LOOP_CTL_ADD, LOOP_CTL_REMOVE). The inode-flag requests on
// a file whose node is a FileAttrer are the VFS's (fileattr.go), as
// Linux's do_vfs_ioctl answers them before the driver.
//
// A bad fd gives EBADF. A file whose driver has no Ioctler gives ENOTTY,
// as Linux's vfs_ioctl does for a file without .unlocked_ioctl. Unlike
// read and write, ioctl does not check the open mode: the driver does,
// per request, as Linux drivers do.
func (p *Proc) Ioctl(fd int, req uint, arg any) (int, error) {
	f := p.files.get(fd)
	if f == nil || f.flags.Load()&unix.O_PATH != 0 || !f.tryRef() {
		return 0, errEBADF
	}
	defer f.release()
	if r, err, ok := p.fileattrIoctl(f, req, arg); ok {
		return r, err
	}
	io, ok := f.h.(Ioctler)
	if !ok {
		return 0, errENOTTY
	}
	return io.Ioctl(p, req, arg)
}
