package fat

// Staged file data: writes of file data (and of a new directory's first
// cluster) that land next to or inside the run written before them are
// gathered in memory and reach the device as one write, as the page
// cache gathers a file's dirty pages and writes back contiguous blocks
// in one request. Files written one after the other are allocated one
// after the other, so copying many small files costs a write per run of
// contiguous clusters rather than one per file.
//
// The run is written before anything that could observe the device
// differently: a read of the bytes it covers, a write elsewhere in the
// data region that is not gathered with it, and every write of metadata
// (directories, the FAT, FSInfo), so that metadata on the device never
// points at data that is not there yet, as with data written at once.
//
// A run that ends because file data goes elsewhere (the next file's
// clusters do not follow, or the run is full) is written behind: by
// another goroutine, from the run's buffer, while the volume stages the
// next run in a second buffer. Every other access to the device, and
// the next write-behind, first waits for it (settle), so the device
// sees the same writes in the same order as when the run is written at
// once, and a copy of many files overlaps its data writes with the
// work of making the next files.

import "syscall"

// stageMax is the most bytes a run holds before it is written.
const stageMax = 256 << 10

// stage is the run of device bytes [off, off+len(b)) not yet written.
type stage struct {
	off int64
	b   []byte // buf[:len]
	buf []byte // stageMax bytes once used
	// slack is where the run may be extended to with zeros: the end
	// of the cluster of the run's last write when that write reached
	// the end of its file (the rest of the cluster holds nothing of
	// it), else the run's end.
	slack int64

	// The run being written behind: its bytes (in spare, the other
	// buffer) and device offset. busy says a goroutine writes it and
	// sends the result on done; failed says the write failed, and the
	// run waits to be written again by the next settle.
	spare  []byte
	behind []byte
	bOff   int64
	busy   bool
	failed bool
	done   chan error
}

// settle waits for the run written behind, if any, and writes it again
// if its write failed. It returns EIO while the run is not written.
func (v *Volume) settle() error {
	s := &v.stg
	if s.busy {
		s.busy = false
		if err := <-s.done; err != nil {
			s.failed = true
		}
	}
	if s.failed {
		if _, err := v.dev.WriteAt(s.behind, s.bOff); err != nil {
			return syscall.EIO
		}
		s.failed = false
	}
	s.behind = nil
	return nil
}

// flushBehind has the staged run written behind (see the package
// comment above), after the previous one.
func (v *Volume) flushBehind() error {
	if err := v.settle(); err != nil {
		return err
	}
	s := &v.stg
	if len(s.b) == 0 {
		return nil
	}
	if s.spare == nil {
		s.spare = make([]byte, stageMax)
		s.done = make(chan error, 1)
	}
	s.behind, s.bOff = s.b, s.off
	s.buf, s.spare = s.spare, s.buf
	s.b = s.buf[:0]
	s.busy = true
	go func(dev Device, b []byte, off int64, done chan<- error) {
		_, err := dev.WriteAt(b, off)
		done <- err
	}(v.dev, s.behind, s.bOff, s.done)
	return nil
}

// stageData has p, followed by z zero bytes, written at device offset
// off: gathered into the staged run when it starts inside the run or at
// its end and the run stays within stageMax, else after the run is
// written, as the start of a new run, or directly when it is larger
// than a run (with the zeros in one vectored write where the device is
// a VecWriter).
func (v *Volume) stageData(p []byte, z int, off int64) error {
	return v.stageDataSlack(p, z, off, off+int64(len(p)+z))
}

// stageDataSlack is stageData for a write after which the device bytes
// up to slack (at least the write's end) hold nothing of a file: a write
// that starts there later joins the run, the bytes between written as
// zeros.
func (v *Volume) stageDataSlack(p []byte, z int, off, slack int64) error {
	s := &v.stg
	n := int64(len(p) + z)
	if len(s.b) > 0 && (off < s.off || off > max(s.off+int64(len(s.b)), s.slack) || off+n-s.off > stageMax) {
		if err := v.flushBehind(); err != nil {
			return err
		}
	}
	if n > stageMax {
		if err := v.settle(); err != nil {
			return err
		}
		if vw, ok := v.dev.(VecWriter); ok && len(p) > 0 && z > 0 && z <= len(zeros) {
			v.vec = [2][]byte{p, zeros[:z]}
			_, err := vw.WriteVecAt(v.vec[:], off)
			v.vec = [2][]byte{}
			if err != nil {
				return syscall.EIO
			}
			return nil
		}
		if _, err := v.dev.WriteAt(p, off); err != nil {
			return syscall.EIO
		}
		for z > 0 {
			k := min(z, len(zeros))
			if _, err := v.dev.WriteAt(zeros[:k], off+int64(len(p))); err != nil {
				return syscall.EIO
			}
			off += int64(k)
			z -= k
		}
		return nil
	}
	if len(s.b) == 0 {
		s.off = off
	}
	if s.buf == nil {
		s.buf = make([]byte, stageMax)
	}
	at := int(off - s.off)
	if at > len(s.b) {
		clear(s.buf[len(s.b):at])
	}
	copy(s.buf[at:], p)
	end := at + int(n)
	clear(s.buf[at+len(p) : end])
	if end >= len(s.b) {
		s.b = s.buf[:end]
		s.slack = slack
	}
	return nil
}

// flushData writes the staged run, after the run written behind. On an
// error the run stays staged, for the next flush to write again.
func (v *Volume) flushData() error {
	if err := v.settle(); err != nil {
		return err
	}
	s := &v.stg
	if len(s.b) == 0 {
		return nil
	}
	if _, err := v.dev.WriteAt(s.b, s.off); err != nil {
		return syscall.EIO
	}
	s.b = s.buf[:0]
	return nil
}

// readDev reads p from the device at off, writing the staged run first
// when it overlaps those bytes.
func (v *Volume) readDev(p []byte, off int64) error {
	if err := v.settle(); err != nil {
		return err
	}
	s := &v.stg
	if len(s.b) > 0 && off < s.off+int64(len(s.b)) && s.off < off+int64(len(p)) {
		if err := v.flushData(); err != nil {
			return err
		}
	}
	if _, err := v.dev.ReadAt(p, off); err != nil {
		return syscall.EIO
	}
	return nil
}

// stagePlaceholder gathers zeros for a directory's new clusters cs into
// the staged run when they continue it, so that file data written after
// them joins the same run: a directory growing while files are copied
// into it then does not cut the run. The directory's own bytes are
// written later, after the run, at its flush (flushDirs), so the zeros
// change nothing that is not rewritten; on the device before then they
// stand in a cluster that the FAT there does not use yet.
func (v *Volume) stagePlaceholder(cs []uint32) {
	s := &v.stg
	cl := int64(v.g.clusterSize)
	for _, c := range cs {
		off := v.g.clusterOff(c)
		if len(s.b) == 0 || off != s.off+int64(len(s.b)) || off+cl-s.off > stageMax {
			return
		}
		s.b = s.buf[:len(s.b)+int(cl)]
		clear(s.b[len(s.b)-int(cl):])
		s.slack = s.off + int64(len(s.b))
	}
}
