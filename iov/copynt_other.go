//go:build !amd64 || race

package iov

import "unsafe"

// haveCopyNT is false: copyStream copies as copy does (under the race
// detector too, which sees no assembly's memory accesses).
const haveCopyNT = false

// haveAVX is unused here (tests set it, for the amd64 build's two paths).
var haveAVX = false

func ntCopy(dst, src unsafe.Pointer, n int) {
	copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
}

func streamFence() {}
