package vfs

// copy_file_range(2) (Linux fs/read_write.c: vfs_copy_file_range,
// generic_copy_file_checks).

import (
	"math"
	"sync"

	"github.com/iovfs/iovfs/iov"
	"golang.org/x/sys/unix"
)

// copyBufSize is the size of the pooled buffer io.Copy falls back to
// (file.go).
const copyBufSize = 64 << 10

var copyBufs = sync.Pool{New: func() any { return new([copyBufSize]byte) }}

// CopyFileRange copies up to n bytes from the file of rfd to the file of
// wfd, as copy_file_range(2), and returns the count. A nil roff (woff)
// means the file position of rfd (wfd), which then advances by the count;
// otherwise *roff (*woff) gives the offset and advances instead. The
// checks run in the kernel's order:
//
//   - EBADF for a descriptor that is not open, then EINVAL for flags != 0;
//   - EISDIR if either file is a directory, EINVAL if either is not a
//     regular file;
//   - EBADF if rfd is not open for reading, wfd not for writing, or wfd
//     has O_APPEND;
//   - EXDEV between two file systems (Linux 5.19+: tmpfs has no
//     ->copy_file_range, so only a copy within one super block falls back
//     to splice); two imported host files are copied by the host's
//     copy_file_range;
//   - EPERM into an immutable file (opened before it became so);
//   - EOVERFLOW if an offset plus n wraps around as unsigned 64-bit
//     numbers (so a negative offset gives EOVERFLOW);
//   - n is cut at the end of the input (a copy from the end returns 0) and
//     at the largest file offset; EINVAL for overlapping ranges of one
//     file; EINVAL for a negative offset or an end past the largest
//     offset; then a count of 0 returns 0.
//
// The count is clamped to 0x7ffff000 bytes. A copy that fails part way
// returns what it copied; an error comes only with a count of 0. The
// bytes go as sendfile's do, through a private pipe that holds the
// source's pages by reference: one copy each. It allocates nothing once
// warm.
func (p *Proc) CopyFileRange(rfd int, roff *int64, wfd int, woff *int64, n int, flags int) (int, error) {
	fi := p.fdget(rfd)
	if fi == nil {
		return 0, errEBADF
	}
	fo := p.fdget(wfd)
	if fo == nil {
		return 0, errEBADF
	}
	if flags != 0 {
		return 0, errEINVAL
	}
	var posIn, posOut int64
	if roff != nil {
		posIn = *roff
	} else {
		posIn = fi.getPos()
	}
	if woff != nil {
		posOut = *woff
	} else {
		posOut = fo.getPos()
	}
	if hi, ok := fi.node.(*hostFile); ok {
		if ho, ok := fo.node.(*hostFile); ok && fi.mnt == nil && fo.mnt == nil {
			return hostCopyFileRange(fi, hi, roff, posIn, fo, ho, woff, posOut, n)
		}
	}
	count, err := copyChecks(fi, posIn, fo, posOut, uint64(n))
	if err != nil || count == 0 {
		return 0, err
	}
	done, err := p.spliceDirect(fi, posIn, driverOff(fi, roff, posIn) == noOffset, fo, posOut, driverOff(fo, woff, posOut) == noOffset, int(min(count, iov.MaxCount)))
	if done > 0 {
		setPos(fi, roff, posIn+int64(done))
		setPos(fo, woff, posOut+int64(done))
	}
	return done, err
}

// copyChecks is generic_copy_file_checks followed by rw_verify_area for
// both ends; it returns the count to copy.
func copyChecks(fi *file, posIn int64, fo *file, posOut int64, count uint64) (uint64, error) {
	sti, err := fi.stat()
	if err != nil {
		return 0, err
	}
	sto, err := fo.stat()
	if err != nil {
		return 0, err
	}
	if sti.IsDir() || sto.IsDir() {
		return 0, errEISDIR
	}
	if !sti.IsRegular() || !sto.IsRegular() {
		return 0, errEINVAL
	}
	if fi.mode&fmRead == 0 || fo.mode&fmWrite == 0 || fo.appending() {
		return 0, errEBADF
	}
	if fi.mnt == nil || fo.mnt == nil || fi.mnt.fs != fo.mnt.fs {
		return 0, unix.EXDEV
	}
	if statPerm(fo.node, &sto)&PermImmutable != 0 {
		return 0, errEPERM // IS_IMMUTABLE(inode_out)
	}
	if uint64(posIn)+count < uint64(posIn) || uint64(posOut)+count < uint64(posOut) {
		return 0, unix.EOVERFLOW
	}
	if posIn >= sti.Size {
		count = 0
	} else {
		count = min(count, uint64(sti.Size)-uint64(posIn))
	}
	// generic_write_check_limits, with s_maxbytes the largest offset.
	if posOut == math.MaxInt64 {
		return 0, unix.EFBIG
	}
	count = min(count, uint64(math.MaxInt64)-uint64(posOut))
	if fi.node == fo.node && posOut+int64(count) > posIn && posOut < posIn+int64(count) {
		return 0, errEINVAL
	}
	for _, pos := range [2]int64{posIn, posOut} {
		if pos < 0 || int64(uint64(pos)+count) < 0 {
			return 0, errEINVAL
		}
	}
	return count, nil
}

// getPos reads the file position.
func (f *file) getPos() int64 {
	if f.mode&fmNoPos != 0 && f.seek != nil { // the driver keeps it (Positionless)
		pos, _ := f.seek.Llseek(0, 0, unix.SEEK_CUR)
		return pos
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	return f.pos
}

// setPos stores a copy's new offset: in *off when the caller gave one,
// otherwise in the file position.
func setPos(f *file, off *int64, pos int64) {
	if off != nil {
		*off = pos
		return
	}
	if f.mode&fmNoPos != 0 && f.seek != nil {
		f.seek.Llseek(0, pos, unix.SEEK_SET)
		return
	}
	f.posMu.Lock()
	f.pos = pos
	f.posMu.Unlock()
}

// hostCopyFileRange copies between two imported host files with the
// host's copy_file_range, at the iovfs file positions or the given
// offsets.
func hostCopyFileRange(fi *file, hi *hostFile, roff *int64, posIn int64, fo *file, ho *hostFile, woff *int64, posOut int64, n int) (int, error) {
	if !hi.acquire() {
		return 0, errEBADF
	}
	defer hi.mu.RUnlock()
	if !ho.acquire() {
		return 0, errEBADF
	}
	defer ho.mu.RUnlock()
	if fi.mode&fmRead == 0 || fo.mode&fmWrite == 0 || fo.appending() {
		return 0, errEBADF
	}
	done, err := unix.CopyFileRange(hi.fd, &posIn, ho.fd, &posOut, n, 0)
	if done > 0 {
		setPos(fi, roff, posIn)
		setPos(fo, woff, posOut)
	}
	return max(done, 0), err
}
