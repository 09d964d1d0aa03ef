package disk

// dax on a read-write mount: file data is copied straight into the
// device's memory (block.DirectAccessor, as ext4-dax's dax_iomap_rw
// writes through dax_direct_access) instead of through the device's write
// path, and read straight out of it. Metadata still goes through the transaction and
// the journal, and the data copy finishes before the transaction that
// points at it commits (data=ordered). block.Copy guards both copies: a
// fault on a view whose host file shrank gives EIO, not a crash.
//
// Reads stay coherent with every change because the mapping is the
// Writer's own extent tree (or block map), walked under its lock for each
// read: a truncate, punch or conversion is seen by the next read, holes
// and unwritten extents read as zeros without touching the device, and
// a data write is in device memory before WriteAt returns. File data
// never sits in the running transaction (writeDirect drops its
// copies, and blocks freed in the running transaction are not
// reused before it commits), so device memory holds what a read must
// see. The exception would be data=journal, whose data lives in the
// running transaction until checkpoint: dax refuses it, as Linux does
// (ext4_should_use_dax is false for journalled data), and readData
// reads through the overlay if it is ever set.

import (
	"syscall"

	"github.com/iovfs/iovfs/block"
)

// copyDax writes p at device offset off into device memory: with the
// whole-device view one guarded copy, otherwise one per contiguous piece
// DirectAccess returns.
func (w *Writer) copyDax(p []byte, off int64) error {
	if w.mem != nil {
		if off < 0 || off > int64(len(w.mem))-int64(len(p)) {
			return syscall.EIO
		}
		if n, err := block.Copy(w.mem[off:off+int64(len(p))], p); err != nil || n < len(p) {
			return nonNilErr(err)
		}
		return nil
	}
	for done := 0; done < len(p); {
		m, err := w.dax.DirectAccess(off+int64(done), len(p)-done)
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
// mount, and read it from there. Call it before the first operation.
// data=journal logs data through the journal instead and does not
// combine with it (the mount refuses data=journal,dax as Linux does).
func (w *Writer) UseDAX(da block.DirectAccessor, mem []byte) {
	w.dax, w.mem = da, mem
}

// DAX reports whether w copies file data to and from device memory.
func (w *Writer) DAX() bool { return w.dax != nil }

// readData reads len(p) bytes of file data at device offset off: from
// device memory on a dax mount (a guarded copy), through the device (and
// the transaction's overlay) otherwise. A short read is EIO.
func (w *Writer) readData(p []byte, off int64) error {
	if w.dax == nil || w.Data == DataJournal {
		return readFull(w.v.dev, p, off)
	}
	if w.mem != nil {
		if off < 0 || off > int64(len(w.mem))-int64(len(p)) {
			return syscall.EIO // a mapping past the device: a corrupt extent
		}
		n, err := block.Copy(p, w.mem[off:off+int64(len(p))])
		if err == nil && n < len(p) {
			err = syscall.EIO
		}
		return err
	}
	for done := 0; done < len(p); {
		m, err := w.dax.DirectAccess(off+int64(done), len(p)-done)
		if err != nil {
			return err
		}
		n, err := block.Copy(p[done:], m)
		if err != nil || n == 0 {
			return nonNilErr(err)
		}
		done += n
	}
	return nil
}
