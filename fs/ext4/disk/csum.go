package disk

import (
	"encoding/binary"
	"hash/crc32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32c is the kernel's crc32c_le (ext4_chksum): no pre- or post-inversion,
// unlike hash/crc32's Update, so the inversions are undone here.
func crc32c(crc uint32, p []byte) uint32 {
	return ^crc32.Update(^crc, castagnoli, p)
}

// crc32cU32 is crc32c over v's four little-endian bytes, by the table: a
// slice of a local array passed to hash/crc32 would escape to the heap,
// and this runs on every inode and extent block checksum of a write.
func crc32cU32(crc, v uint32) uint32 {
	for i := 0; i < 4; i++ {
		crc = castagnoli[byte(crc)^byte(v)] ^ crc>>8
		v >>= 8
	}
	return crc
}

var zero8 [8]byte

func le16(b []byte, off int) uint16 { return binary.LittleEndian.Uint16(b[off:]) }
func le32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
func le64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

// crc16Table is the kernel's lib/crc16.c table (polynomial 0x8005,
// reflected), used by gdt_csum.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i)
		for k := 0; k < 8; k++ {
			if c&1 != 0 {
				c = c>>1 ^ 0xA001
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(crc uint16, p []byte) uint16 {
	for _, b := range p {
		crc = crc>>8 ^ crc16Table[byte(crc)^b]
	}
	return crc
}
