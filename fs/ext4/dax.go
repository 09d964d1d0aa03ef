package ext4

// The dax read path: file data is copied from the device's memory
// (block.DirectAccessor, Linux's dax_direct_access) straight into the
// caller's vector with block.CopyOut, which turns a fault on a truncated
// host file (SIGBUS) into EIO.

import (
	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/iov"
)

// copyDax copies n bytes at device offset dev into dst and consumes them.
// With the whole-device view taken at mount it is one bounds-checked
// slice and one copy; otherwise it asks the device for each contiguous
// piece, as dax_iomap_iter loops over dax_direct_access.
func (fs *FS) copyDax(dst *iov.Iter, n int, dev int64) (int, error) {
	if fs.mem != nil {
		return block.CopyOut(dst, fs.mem[dev:dev+int64(n)])
	}
	done := 0
	for done < n {
		b, err := fs.dax.DirectAccess(dev+int64(done), n-done)
		if err != nil {
			return partial(done, err)
		}
		k, err := block.CopyOut(dst, b)
		done += k
		if err != nil || k == 0 {
			return partial(done, nonNil(err))
		}
	}
	return done, nil
}

// copyMC is _copy_mc_to_iter: a copy that survives a memory fault.
func copyMC(dst *iov.Iter, src []byte) (int, error) { return block.CopyOut(dst, src) }
