//go:build amd64 && !race

#include "textflag.h"

// func copyNT(dst, src unsafe.Pointer, n int)
TEXT ·copyNT(SB), NOSPLIT, $0-24
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), CX
	SHRQ	$6, CX
	JZ	done
loop:
	MOVOU	0(SI), X0
	MOVOU	16(SI), X1
	MOVOU	32(SI), X2
	MOVOU	48(SI), X3
	MOVNTO	X0, 0(DI)
	MOVNTO	X1, 16(DI)
	MOVNTO	X2, 32(DI)
	MOVNTO	X3, 48(DI)
	ADDQ	$64, SI
	ADDQ	$64, DI
	DECQ	CX
	JNZ	loop
done:
	RET

// func copyNTAVX(dst, src unsafe.Pointer, n int)
TEXT ·copyNTAVX(SB), NOSPLIT, $0-24
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), CX
	SHRQ	$7, CX
	JZ	tail
loop128:
	PREFETCHNTA	0x1C0(SI)
	PREFETCHNTA	0x280(SI)
	VMOVDQU	0(SI), Y0
	VMOVDQU	32(SI), Y1
	VMOVDQU	64(SI), Y2
	VMOVDQU	96(SI), Y3
	VMOVNTDQ	Y0, 0(DI)
	VMOVNTDQ	Y1, 32(DI)
	VMOVNTDQ	Y2, 64(DI)
	VMOVNTDQ	Y3, 96(DI)
	ADDQ	$128, SI
	ADDQ	$128, DI
	DECQ	CX
	JNZ	loop128
tail:
	MOVQ	n+16(FP), CX
	ANDQ	$64, CX
	JZ	end
	VMOVDQU	0(SI), Y0
	VMOVDQU	32(SI), Y1
	VMOVNTDQ	Y0, 0(DI)
	VMOVNTDQ	Y1, 32(DI)
end:
	VZEROUPPER
	RET

// func streamFence()
TEXT ·streamFence(SB), NOSPLIT, $0-0
	SFENCE
	RET
