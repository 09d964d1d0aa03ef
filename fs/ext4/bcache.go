package ext4

// The bcache= option and the metadata device of a dax mount.

import (
	"strconv"
	"strings"
	"syscall"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/iov"
)

// parseCacheSize reads the bcache= mount option: a byte count with an
// optional K, M or G suffix; 0 turns the cache off.
func parseCacheSize(s string) (int64, bool) {
	mul := int64(1)
	switch {
	case strings.HasSuffix(s, "K") || strings.HasSuffix(s, "k"):
		mul = 1 << 10
	case strings.HasSuffix(s, "M") || strings.HasSuffix(s, "m"):
		mul = 1 << 20
	case strings.HasSuffix(s, "G") || strings.HasSuffix(s, "g"):
		mul = 1 << 30
	}
	if mul != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mul {
		return 0, false
	}
	return n * mul, true
}

// memDevice is the Device of a dax mount's metadata: the device's memory
// view, copied with block.CopyOut so a host file truncated under the
// mapping gives EIO rather than a fault.
type memDevice []byte

func (m memDevice) Size() int64 { return int64(len(m)) }

func (m memDevice) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(m)) {
		return 0, syscall.EIO
	}
	it := iov.Buf(p)
	return block.CopyOut(&it, m[off:off+int64(len(p))])
}
