// Package iov describes where the bytes of one read or write go to or come
// from: a single buffer, a list of segments, or a discard sink.
//
// An Iter is the Go counterpart of Linux's struct iov_iter. It is a small
// value, passed by value to drivers, so wrapping one buffer in an Iter never
// allocates (the equivalent of Linux's ITER_UBUF). A driver that receives an
// Iter copies into it or out of it with the helpers below, which consume it
// as they go; the caller's copy is unaffected, and the driver reports how
// many bytes it moved.
//
// Every helper tests the single-buffer kind first, as lib/iov_iter.c does,
// because that is the case the hot path cares about.
package iov

import (
	"syscall"
)

// Linux limits for vectored I/O (include/uapi/linux/uio.h, include/linux/fs.h).
const (
	// MaxSegments is UIO_MAXIOV: more segments than this give EINVAL.
	MaxSegments = 1024
	// MaxCount is MAX_RW_COUNT: one read or write moves at most this many
	// bytes; larger totals are clamped, not refused.
	MaxCount = 0x7ffff000
)

// Kind says what an Iter describes.
type Kind uint8

const (
	// KindBuf is one contiguous buffer (Linux ITER_UBUF).
	KindBuf Kind = iota
	// KindVec is a list of buffers (Linux ITER_IOVEC).
	KindVec
	// KindDiscard accepts and drops up to Len bytes (Linux ITER_DISCARD).
	KindDiscard
)

// Iter is a cursor over the bytes of one transfer. The zero Iter is an
// empty single-buffer iterator.
//
// An Iter refers to the caller's memory; it never owns or copies the
// segment list. Segments of length zero are skipped. Len is the number of
// bytes still to transfer, after clamping to MaxCount.
type Iter struct {
	// cur is the unconsumed part of the current buffer (KindBuf and KindVec).
	cur []byte
	// rest holds the segments after cur (KindVec only).
	rest [][]byte
	// n is the number of bytes left, including cur; never more than MaxCount.
	n    int
	kind Kind
}

// Buf returns an iterator over the single buffer p, clamped to MaxCount.
func Buf(p []byte) Iter {
	if len(p) > MaxCount {
		p = p[:MaxCount]
	}
	return Iter{cur: p, n: len(p), kind: KindBuf}
}

// Discard returns an iterator that accepts and drops n bytes.
func Discard(n int) Iter {
	if n > MaxCount {
		n = MaxCount
	}
	return Iter{n: n, kind: KindDiscard}
}

// Vec returns an iterator over segs without checking the segment limit, for
// vectors built inside iovfs. Use Import for vectors that come from a caller.
// The total is clamped to MaxCount.
func Vec(segs [][]byte) Iter {
	it := Iter{rest: segs, kind: KindVec}
	for _, s := range segs {
		it.n += len(s)
		if it.n >= MaxCount {
			it.n = MaxCount
			break
		}
	}
	it.next()
	return it
}

// Import applies the Linux rules that every vectored call shares
// (import_iovec in lib/iov_iter.c) and returns an iterator over segs.
// More than MaxSegments segments give EINVAL. Zero-length segments are
// skipped. The total is clamped to MaxCount, so trailing segments may be
// transferred in part or not at all.
//
// segments is the number of non-empty segments. When it is 0 the call
// transfers nothing and must not reach the driver. When it is 1 the
// iterator's Segment is the whole transfer, so the call can take the
// scalar path with it.
func Import(segs [][]byte) (it Iter, segments int, err error) {
	if len(segs) > MaxSegments {
		return Iter{}, 0, syscall.EINVAL
	}
	total := 0
	for _, s := range segs {
		if len(s) != 0 {
			segments++
			total += len(s)
		}
	}
	it = Iter{rest: segs, n: min(total, MaxCount), kind: KindVec}
	it.next()
	return it, segments, nil
}

// next makes cur the next non-empty segment, within the remaining count.
func (it *Iter) next() {
	for len(it.cur) == 0 && len(it.rest) > 0 && it.n > 0 {
		it.cur = it.rest[0]
		it.rest = it.rest[1:]
	}
	if len(it.cur) > it.n {
		it.cur = it.cur[:it.n]
	}
}

// Kind reports what the iterator describes.
func (it *Iter) Kind() Kind { return it.kind }

// Len returns the number of bytes left to transfer.
func (it *Iter) Len() int { return it.n }

// Segment returns the unconsumed part of the current buffer, which is empty
// only when Len is 0 or the kind is KindDiscard. A driver that produces
// bytes in place may fill it and then call Advance.
func (it *Iter) Segment() []byte { return it.cur }

// Advance consumes n bytes, n <= Len.
func (it *Iter) Advance(n int) {
	if n > it.n {
		n = it.n
	}
	it.n -= n
	if it.kind == KindBuf {
		it.cur = it.cur[n:]
		return
	}
	if it.kind == KindDiscard {
		return
	}
	for n > 0 {
		if n < len(it.cur) {
			it.cur = it.cur[n:]
			return
		}
		n -= len(it.cur)
		it.cur = nil
		it.next()
	}
	it.next()
}

// Truncate limits the iterator to at most n more bytes.
func (it *Iter) Truncate(n int) {
	if n < 0 {
		n = 0
	}
	if n >= it.n {
		return
	}
	it.n = n
	if len(it.cur) > n {
		it.cur = it.cur[:n]
	}
}

// CopyOut copies bytes from src into the iterator (a read fills the
// caller's buffers this way) and consumes them. It returns the number of
// bytes copied: min(len(src), Len()).
func (it *Iter) CopyOut(src []byte) int {
	if it.kind == KindBuf {
		n := copy(it.cur, src)
		it.cur = it.cur[n:]
		it.n -= n
		return n
	}
	if it.kind == KindDiscard {
		n := min(len(src), it.n)
		it.n -= n
		return n
	}
	done := 0
	for len(src) > 0 && it.n > 0 {
		n := copy(it.cur, src)
		src = src[n:]
		done += n
		it.Advance(n)
	}
	return done
}

// CopyIn copies bytes from the iterator into dst (a write takes the
// caller's bytes this way) and consumes them. It returns the number of
// bytes copied: min(len(dst), Len()). A discard iterator yields zeros.
func (it *Iter) CopyIn(dst []byte) int {
	if it.kind == KindBuf {
		n := copy(dst, it.cur)
		it.cur = it.cur[n:]
		it.n -= n
		return n
	}
	if it.kind == KindDiscard {
		n := min(len(dst), it.n)
		clear(dst[:n])
		it.n -= n
		return n
	}
	done := 0
	for len(dst) > 0 && it.n > 0 {
		n := copy(dst, it.cur)
		dst = dst[n:]
		done += n
		it.Advance(n)
	}
	return done
}

// Zero writes up to n zero bytes into the iterator and consumes them. It
// returns the number of bytes zeroed: min(n, Len()).
func (it *Iter) Zero(n int) int {
	if n > it.n {
		n = it.n
	}
	if it.kind == KindBuf {
		clear(it.cur[:n])
		it.cur = it.cur[n:]
		it.n -= n
		return n
	}
	if it.kind == KindDiscard {
		it.n -= n
		return n
	}
	left := n
	for left > 0 {
		k := min(left, len(it.cur))
		clear(it.cur[:k])
		left -= k
		it.Advance(k)
	}
	return n
}
