package ext4_test

import "testing"

// BenchmarkRWBlockMap: BenchmarkRWSeqWrite1M and BenchmarkRWRandWrite4K on
// block-mapped files (an ext3 volume with 4 KiB blocks, mounted as ext3 on
// both sides).
//
//	go test ./fs/ext4 -run '^$' -bench BenchmarkRWBlockMap -benchmem
func BenchmarkRWBlockMap(b *testing.B) {
	sides := rwSidesOf(b, "ext3")
	for _, name := range sideOrder {
		b.Run("SeqWrite1M/"+name, func(b *testing.B) { benchSeqWrite1M(b, sides[name]) })
	}
	for _, name := range sideOrder {
		b.Run("RandWrite4K/"+name, func(b *testing.B) { benchRandWrite4K(b, sides[name]) })
	}
}
