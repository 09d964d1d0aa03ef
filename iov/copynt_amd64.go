//go:build amd64 && !race

package iov

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// haveCopyNT: SSE2, and so MOVNTDQ, is in every amd64 CPU.
const haveCopyNT = true

// haveAVX selects copyNTAVX: 32-byte loads and stores, as Go's memmove
// uses for a large copy, where the 16-byte loop trails it by a fifth.
var haveAVX = cpu.X86.HasAVX

// ntCopy copies n bytes, a multiple of 64, from src to dst, 16-byte
// aligned, with non-temporal stores, which the caller fences
// (streamFence) before the bytes may be read by another thread.
func ntCopy(dst, src unsafe.Pointer, n int) {
	if haveAVX {
		copyNTAVX(dst, src, n)
	} else {
		copyNT(dst, src, n)
	}
}

// copyNT is ntCopy with SSE2 stores.
//
//go:noescape
func copyNT(dst, src unsafe.Pointer, n int)

// copyNTAVX is ntCopy with AVX stores.
//
//go:noescape
func copyNTAVX(dst, src unsafe.Pointer, n int)

// streamFence orders the non-temporal stores made so far before the
// stores that follow it (SFENCE): a copy fences once at its end, not
// once a piece, which cost a tenth of a copy made in 4 KiB pieces.
func streamFence()
