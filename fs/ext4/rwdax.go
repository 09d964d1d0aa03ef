package ext4

// dax on a read-write mount: file data is copied straight into the
// device's memory (block.DirectAccessor, as ext4-dax's dax_iomap_rw
// writes through dax_direct_access) instead of through the device's write
// path. Metadata still goes through the transaction and the journal, and
// the data copy finishes before the transaction that points at it
// commits (data=ordered). block.Copy guards the copy: a fault on a view
// whose host file shrank gives EIO, not a crash.

import (
	"syscall"

	"github.com/iovfs/iovfs/block"
)

// copyDax writes p at device offset off into device memory: with the
// whole-device view one guarded copy, otherwise one per contiguous piece
// DirectAccess returns.
func (d *txDev) copyDax(p []byte, off int64) error {
	if d.mem != nil {
		if off < 0 || off > int64(len(d.mem))-int64(len(p)) {
			return syscall.EIO
		}
		if n, err := block.Copy(d.mem[off:off+int64(len(p))], p); err != nil || n < len(p) {
			return nonNilErr(err)
		}
		return nil
	}
	for done := 0; done < len(p); {
		m, err := d.dax.DirectAccess(off+int64(done), len(p)-done)
		if err != nil {
			return err
		}
		n, err := block.Copy(m, p[done:])
		if err != nil || n == 0 {
			return nonNilErr(err)
		}
		done += n
	}
	return nil
}

// UseDAX makes w write file data into device memory through da (mem, if
// not nil, being the view of the whole device), as a read-write dax
// mount. Call it before the first operation. data=journal logs data
// through the journal instead and does not combine with it (the mount
// refuses data=journal,dax as Linux does).
func (w *Writer) UseDAX(da block.DirectAccessor, mem []byte) {
	w.tx.dax, w.tx.mem = da, mem
}

// DAX reports whether the mount writes file data into device memory.
func (fs *rwFS) DAX() bool { return fs.w.tx.dax != nil }
