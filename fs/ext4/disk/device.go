package disk

import "io"

// Device is the block source a Volume reads from.
//
// ReadAt has io.ReaderAt's contract: it reads len(p) bytes at off and returns
// n < len(p) only with a non-nil error. It must be safe for concurrent use.
// Size is the device size in bytes; it must not change while a Volume uses
// the device.
type Device interface {
	ReadAt(p []byte, off int64) (int, error)
	Size() int64
}

// BytesDevice is a Device over memory, for images loaded into RAM.
type BytesDevice []byte

// ReadAt implements Device.
func (d BytesDevice) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(d)) {
		return 0, io.EOF
	}
	n := copy(p, d[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Size implements Device.
func (d BytesDevice) Size() int64 { return int64(len(d)) }
