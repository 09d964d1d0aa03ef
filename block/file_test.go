package block_test

import (
	"sync"
	"testing"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/dev/ram"
	"github.com/iovfs/iovfs/vfs"
)

// TestUnalignedWritesSameSector: concurrent one-byte writes into one
// sector all land (the read-modify-write is serialised per sector, as
// Linux's page lock does it).
func TestUnalignedWritesSameSector(t *testing.T) {
	d, err := ram.New(0, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := d.Open(0, vfs.Cred{})
	f := h.(*block.File)
	if got, ok := block.Of(h); !ok || got != block.Device(d) {
		t.Fatalf("block.Of: %v %v", got, ok)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				off := int64(1000 + (i%64)*8 + g) // all in sectors 1 and 2
				if n, err := f.Write([]byte{byte(g + 1)}, off); n != 1 || err != nil {
					t.Errorf("write: %d, %v", n, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	buf := make([]byte, 512)
	f.Read(buf, 1000)
	for i, b := range buf {
		if b != byte(i%8+1) {
			t.Fatalf("byte %d = %d: a write was lost", 1000+i, b)
		}
	}
}
