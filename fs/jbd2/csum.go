package jbd2

import "hash/crc32"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32c is the kernel's crc32c_le (jbd2_chksum): no pre- or
// post-inversion, unlike hash/crc32's Update, so the inversions are
// undone here.
func crc32c(crc uint32, p []byte) uint32 {
	return ^crc32.Update(^crc, castagnoli, p)
}

// crc32cBE32 is crc32c over v's four big-endian bytes, without a slice
// that would escape.
func crc32cBE32(crc, v uint32) uint32 {
	for i := 3; i >= 0; i-- {
		crc = castagnoli[byte(crc)^byte(v>>(8*i))] ^ crc>>8
	}
	return crc
}
