package iov

import "unsafe"

// Stream returns an iterator over segs, as Vec does, for the source of a
// bulk copy (a file copied into another): a driver that copies its bytes
// in with CopyIn stores pieces of streamMin bytes or more past the CPU's
// caches (non-temporal stores on amd64), as Go's memmove does for one
// copy of a megabyte or more. A copy whose bytes will not be read again
// soon then costs what one large memmove costs, rather than the cache
// misses of writing memory it first has to read, even when the driver
// copies in runs of a few pages.
func Stream(segs [][]byte) Iter {
	it := Vec(segs)
	it.meta = it.meta&^(3<<kindShift) | uint64(KindStream)<<kindShift
	return it
}

// streamMin is the smallest piece copyStream stores past the caches.
const streamMin = 4096

// copyStream copies min(len(dst), len(src)) bytes of src into dst, the
// aligned middle of a large piece with non-temporal stores, which the
// caller fences (streamFence) once it has copied all its pieces.
func copyStream(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n < streamMin || !haveCopyNT {
		return copy(dst, src[:n])
	}
	head := int(-uintptr(unsafe.Pointer(unsafe.SliceData(dst))) & 63)
	copy(dst[:head], src[:head])
	body := (n - head) &^ 63
	ntCopy(unsafe.Pointer(&dst[head]), unsafe.Pointer(&src[head]), body)
	copy(dst[head+body:n], src[head+body:n])
	return n
}
