//go:build amd64 && !race

package iov

import "unsafe"

// haveCopyNT: SSE2, and so MOVNTDQ, is in every amd64 CPU.
const haveCopyNT = true

// copyNT copies n bytes, a multiple of 64, from src to dst, 16-byte
// aligned, with non-temporal stores, and fences them before it returns.
//
//go:noescape
func copyNT(dst, src unsafe.Pointer, n int)
