// Package mem holds the memory devices of Linux's drivers/char/mem.c and
// drivers/char/random.c: /dev/null, /dev/zero, /dev/full, /dev/random and
// /dev/urandom.
//
// Each driver has the methods Linux gives it, so that the VFS's choice of
// path, and the RWF_* flags each accepts, are Linux's too. The devices have
// no state: a value of each type is both the device and its open handle.
// None keeps a file position (Linux's null_lseek and noop_llseek), so reads
// and writes take no lock.
package mem

import (
	"crypto/rand"

	"github.com/iovfs/iovfs/iov"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// Linux's device numbers for the memory devices (major 1).
const major = 1

func charDev(minor uint32) (uint32, uint64) {
	return unix.S_IFCHR | 0o666, vfs.Mkdev(major, minor)
}

// Null is /dev/null: reads return end of file, writes swallow the data.
// Like Linux's null_fops it has both the scalar and the vectored methods:
// both are trivial, and the scalar ones keep read(2) off the vector path.
type Null struct{}

func (Null) Open(int, vfs.Cred) (vfs.Handle, error) { return Null{}, nil }
func (Null) DevInfo() (uint32, uint64)              { return charDev(3) }
func (Null) Read([]byte, int64) (int, error)        { return 0, nil }
func (Null) ReadIter(iov.Iter, int64) (int, error)  { return 0, nil }
func (Null) Write(p []byte, _ int64) (int, error)   { return len(p), nil }
func (Null) WriteIter(src iov.Iter, _ int64) (int, error) {
	return src.Len(), nil
}
func (Null) Positionless() {}
func (Null) NoWait()       {}

// NoSpliceRead and Discard: as Linux's null_fops, splice reads nothing
// from /dev/null (EINVAL) and drops what it splices into it unread.
func (Null) NoSpliceRead() {}
func (Null) Discard()      {}

// Zero is /dev/zero: reads return zeros, writes are swallowed. It keeps the
// scalar Read beside ReadIter for the reason Linux keeps .read_zero: a
// plain read is the common case, and dropping .read cost Linux about 2% on
// dd bs=4k.
type Zero struct{}

func (Zero) Open(int, vfs.Cred) (vfs.Handle, error) { return Zero{}, nil }
func (Zero) DevInfo() (uint32, uint64)              { return charDev(5) }
func (Zero) Read(p []byte, _ int64) (int, error) {
	clear(p)
	return len(p), nil
}
func (Zero) ReadIter(dst iov.Iter, _ int64) (int, error) {
	return iov.ZeroAll(dst), nil
}
func (Zero) Write(p []byte, _ int64) (int, error) { return len(p), nil }
func (Zero) WriteIter(src iov.Iter, _ int64) (int, error) {
	return src.Len(), nil
}
func (Zero) Positionless() {}
func (Zero) NoWait()       {}

// Discard: what splice moves into /dev/zero is dropped unread
// (splice_write_zero).
func (Zero) Discard() {}

// VecZero is /dev/zero with only the vectored methods, as NuttX 12.8 had
// before its revert and as Linux's ext4 has for files. A scalar read of it
// goes through a single-buffer iov.Iter. It exists to measure that path
// (iovfs bench zero, variant iter-wrap); the default /dev does not use it.
type VecZero struct{}

func (VecZero) Open(int, vfs.Cred) (vfs.Handle, error) { return VecZero{}, nil }
func (VecZero) DevInfo() (uint32, uint64)              { return charDev(5) }
func (VecZero) ReadIter(dst iov.Iter, _ int64) (int, error) {
	return iov.ZeroAll(dst), nil
}
func (VecZero) WriteIter(src iov.Iter, _ int64) (int, error) {
	return src.Len(), nil
}
func (VecZero) Positionless() {}
func (VecZero) NoWait()       {}
func (VecZero) Discard()      {}

// Full is /dev/full: reads return zeros, writes fail with ENOSPC. Its
// methods are Linux's full_fops: a vectored read (read_iter_zero) and a
// scalar write (write_full), and no FMODE_NOWAIT.
type Full struct{}

func (Full) Open(int, vfs.Cred) (vfs.Handle, error) { return Full{}, nil }
func (Full) DevInfo() (uint32, uint64)              { return charDev(7) }
func (Full) ReadIter(dst iov.Iter, _ int64) (int, error) {
	return iov.ZeroAll(dst), nil
}
func (Full) Write([]byte, int64) (int, error) { return 0, unix.ENOSPC }
func (Full) Positionless()                    {}

// NoSpliceWrite: Linux's full_fops has no splice_write, so a splice into
// /dev/full gives EINVAL rather than ENOSPC.
func (Full) NoSpliceWrite() {}

// Random is /dev/random and /dev/urandom: reads return bytes from
// crypto/rand, which never blocks once the host's pool is initialised, as
// Linux's random has not since 5.6. Writes are accepted and dropped: Linux
// mixes them into its pool without crediting entropy, and Go's crypto/rand
// has no pool to mix into. Like Linux's random_fops it is vectored only.
type Random struct {
	// Minor is 8 for /dev/random and 9 for /dev/urandom.
	Minor uint32
}

func (r Random) Open(int, vfs.Cred) (vfs.Handle, error) { return r, nil }
func (r Random) DevInfo() (uint32, uint64)              { return charDev(r.Minor) }
func (Random) ReadIter(dst iov.Iter, _ int64) (int, error) {
	n := dst.Len()
	for dst.Len() > 0 {
		seg := dst.Segment()
		if len(seg) == 0 { // a discard iterator: nothing to fill
			break
		}
		rand.Read(seg)
		dst.Advance(len(seg))
	}
	return n, nil
}
func (Random) WriteIter(src iov.Iter, _ int64) (int, error) {
	return src.Len(), nil
}
func (Random) Positionless() {}
func (Random) NoWait()       {}
