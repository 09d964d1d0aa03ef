package shell

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// TestCoalesceDataMemory: the test tool (a Go program with tens of
// thousands of data segments) starts with the same memory, byte for
// byte, from its own data section and from the joined one, and the
// joined one has far fewer segments.
func TestCoalesceDataMemory(t *testing.T) {
	bin := buildGo(t, "tool")
	joined := coalesceData(bin)
	segs := func(b []byte) int {
		s, ok := dataSegments(b)
		if !ok {
			t.Fatal("data section not parsed")
		}
		return len(s)
	}
	before, after := segs(bin), segs(joined)
	if after >= before || after > 100 {
		t.Fatalf("%d segments joined into %d", before, after)
	}
	t.Logf("%d data segments joined into %d", before, after)
	ctx := context.Background()
	memory := func(b []byte) []byte {
		// The interpreter: the memory is the same whatever runs the
		// code, and it compiles faster.
		r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
		defer r.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, r)
		m, err := r.InstantiateWithConfig(ctx, b, wazero.NewModuleConfig().WithStartFunctions())
		if err != nil {
			t.Fatal(err)
		}
		mem, ok := m.Memory().Read(0, m.Memory().Size())
		if !ok {
			t.Fatal("memory not readable")
		}
		return bytes.Clone(mem)
	}
	if !bytes.Equal(memory(bin), memory(joined)) {
		t.Error("the joined data section gives another memory")
	}
}

// dataSegments parses a module's data section.
func dataSegments(bin []byte) ([]dataSeg, bool) {
	p := 8
	for p < len(bin) {
		size, n := uvarintAt(bin[p+1:])
		if bin[p] == 11 {
			return parseData(bin[p : p+1+n+int(size)])
		}
		p += 1 + n + int(size)
	}
	return nil, false
}

func uvarintAt(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// module builds a module with one memory of a page and the given data
// section body (count and segments), and a data count section if asked.
func module(data []byte, dataCount bool) []byte {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0, 5, 3, 1, 0, 1} // memory section: min 1 page
	if dataCount {
		m = append(m, 12, 1, 1)
	}
	m = append(m, 11, byte(len(data)))
	return append(m, data...)
}

// TestCoalesceDataRefuses: modules it must leave alone come back as
// they are: overlapping segments, a passive segment, a data count
// section, a truncated section; adjacent segments are joined.
func TestCoalesceDataRefuses(t *testing.T) {
	seg := func(off byte, b ...byte) []byte {
		return append([]byte{0, 0x41, off, 0x0b, byte(len(b))}, b...)
	}
	join := func(parts ...[]byte) []byte {
		out := []byte{byte(len(parts))}
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, c := range []struct {
		name   string
		bin    []byte
		joined bool
	}{
		{"adjacent", module(join(seg(0, 1, 2), seg(4, 3)), false), true},
		{"out of order", module(join(seg(8, 1), seg(0, 2)), false), true},
		{"overlapping", module(join(seg(0, 1, 2, 3), seg(2, 9)), false), false},
		{"passive", module(append(append([]byte{2}, seg(0, 1)...), 1, 1, 7), false), false},
		{"data count", module(join(seg(0, 1), seg(2, 2)), true), false},
		{"truncated", module(join(seg(0, 1, 2))[:4], false), false},
	} {
		got := coalesceData(c.bin)
		if changed := !bytes.Equal(got, c.bin); changed != c.joined {
			t.Errorf("%s: changed %v, want %v", c.name, changed, c.joined)
		}
		if c.joined {
			s, ok := dataSegments(got)
			if !ok || len(s) != 1 {
				t.Errorf("%s: %d segments after joining (%v)", c.name, len(s), ok)
			}
		}
	}
}

// TestSleb128: the signed LEB128 of i32.const operands round-trips.
func TestSleb128(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, 127, 128, 1 << 20, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		b := appendSleb128(nil, v)
		got, n := sleb128(b)
		if got != v || n != len(b) {
			t.Errorf("%d: encoded % x, decoded %d (%d bytes)", v, b, got, n)
		}
	}
	if _, n := sleb128([]byte{0x80, 0x80}); n != 0 {
		t.Error("a truncated number decoded")
	}
}
