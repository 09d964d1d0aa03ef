package shell

// Coalescing a module's data segments before it is compiled. wazero
// evaluates each active data segment's offset expression at every
// instantiation, with allocations; Go's linker writes a segment for each
// run of non-zero bytes (32,428 in the 2.8 MiB test program), which made
// evaluating them most of a program's start. Segments that follow each
// other in memory are joined, the gaps between them (at most
// maxDataGap) written as the zeros a new memory holds anyway, so the
// memory a program starts with is the same byte for byte.

import (
	"cmp"
	"encoding/binary"
	"slices"
)

// maxDataGap is the largest run of zeros a joined segment takes in.
const maxDataGap = 4096

type dataSeg struct {
	off  uint32
	data []byte
}

// coalesceData returns bin with its data segments joined, or bin itself
// when the module is not one this applies to: segments other than active
// ones of memory 0 at a constant i32 offset, overlapping segments, a data count section (memory.init and data.drop name
// segments by index), or anything it cannot parse.
func coalesceData(bin []byte) []byte {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return bin
	}
	p := 8
	var dataStart, dataEnd int
	for p < len(bin) {
		id := bin[p]
		size, n := binary.Uvarint(bin[p+1:])
		if n <= 0 || size > uint64(len(bin)-p-1-n) {
			return bin
		}
		body := p + 1 + n
		switch id {
		case 12: // data count
			return bin
		case 11:
			dataStart, dataEnd = p, body+int(size)
		}
		p = body + int(size)
	}
	if dataEnd == 0 {
		return bin
	}
	segs, ok := parseData(bin[dataStart:dataEnd])
	if !ok {
		return bin
	}
	joined := joinSegments(segs)
	if len(joined) == len(segs) {
		return bin
	}
	sec := binary.AppendUvarint(nil, uint64(len(joined)))
	for _, s := range joined {
		sec = append(sec, 0, 0x41) // active, memory 0; i32.const
		sec = appendSleb128(sec, int64(int32(s.off)))
		sec = append(sec, 0x0b) // end
		sec = binary.AppendUvarint(sec, uint64(len(s.data)))
		sec = append(sec, s.data...)
	}
	out := make([]byte, 0, len(bin))
	out = append(out, bin[:dataStart]...)
	out = append(out, 11)
	out = binary.AppendUvarint(out, uint64(len(sec)))
	out = append(out, sec...)
	return append(out, bin[dataEnd:]...)
}

// parseData reads a data section (id and size included) whose segments
// are all active, of memory 0, at "i32.const N; end", none overlapping
// another, and returns them in memory order (since none overlaps, the
// order they are applied in makes no difference).
func parseData(sec []byte) ([]dataSeg, bool) {
	_, n := binary.Uvarint(sec[1:])
	b := sec[1+n:]
	count, n := binary.Uvarint(b)
	if n <= 0 || count > uint64(len(b)) {
		return nil, false
	}
	b = b[n:]
	segs := make([]dataSeg, 0, count)
	for range count {
		if len(b) < 2 || b[0] != 0 || b[1] != 0x41 {
			return nil, false
		}
		off, n := sleb128(b[2:])
		if n <= 0 || off != int64(int32(off)) || 2+n >= len(b) || b[2+n] != 0x0b {
			return nil, false
		}
		b = b[3+n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, false
		}
		segs = append(segs, dataSeg{uint32(int32(off)), b[n : n+int(size)]})
		b = b[n+int(size):]
	}
	if len(b) != 0 {
		return nil, false
	}
	slices.SortStableFunc(segs, func(a, b dataSeg) int { return cmp.Compare(a.off, b.off) })
	end := uint64(0)
	for _, s := range segs {
		if uint64(s.off) < end {
			return nil, false
		}
		end = uint64(s.off) + uint64(len(s.data))
	}
	return segs, true
}

// joinSegments joins each segment to the one before when the gap between
// them is at most maxDataGap. The segments' bytes are the module's; a
// joined segment gets bytes of its own.
func joinSegments(segs []dataSeg) []dataSeg {
	var out []dataSeg
	owned := false // whether out's last segment's bytes are its own
	for _, s := range segs {
		if k := len(out) - 1; k >= 0 {
			last := &out[k]
			if gap := uint64(s.off) - (uint64(last.off) + uint64(len(last.data))); gap <= maxDataGap {
				if !owned {
					last.data = append([]byte(nil), last.data...)
					owned = true
				}
				last.data = append(last.data, make([]byte, gap)...)
				last.data = append(last.data, s.data...)
				continue
			}
		}
		out = append(out, s)
		owned = false
	}
	return out
}

// sleb128 decodes a signed LEB128 number (wasm's i32.const operand); n is
// 0 when b ends first or the number is longer than 10 bytes.
func sleb128(b []byte) (v int64, n int) {
	var shift uint
	for i, c := range b {
		if i == 10 {
			return 0, 0
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v, i + 1
		}
	}
	return 0, 0
}

// appendSleb128 appends v in signed LEB128.
func appendSleb128(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
