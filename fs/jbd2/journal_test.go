package jbd2

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// memDev is a Device in memory. After limit writes (if limit >= 0) every
// write fails with EIO and changes nothing: a power cut.
type memDev struct {
	b      []byte
	limit  int
	writes int
}

func (d *memDev) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(d.b)) {
		return 0, syscall.EIO
	}
	return copy(p, d.b[off:]), nil
}

func (d *memDev) WriteAt(p []byte, off int64) (int, error) {
	if d.limit >= 0 && d.writes >= d.limit {
		return 0, syscall.EIO
	}
	d.writes++
	if off < 0 || off+int64(len(p)) > int64(len(d.b)) {
		return 0, syscall.EIO
	}
	return copy(d.b[off:], p), nil
}

func (d *memDev) Flush() error { return nil }

// format describes a log format under test.
type format struct {
	name     string
	incompat uint32
}

var formats = []format{
	{"plain32", IncompatRevoke},
	{"plain64", IncompatRevoke | Incompat64bit},
	{"csum2-32", IncompatRevoke | IncompatCsumV2},
	{"csum2-64", IncompatRevoke | Incompat64bit | IncompatCsumV2},
	{"csum3-32", IncompatRevoke | IncompatCsumV3},
	{"csum3-64", IncompatRevoke | Incompat64bit | IncompatCsumV3},
}

// newLog makes a device of nblocks blocks of bs bytes whose log is
// jlen blocks split in two extents (the second from block 1000 on), with
// a fresh version 2 superblock of features incompat.
func newLog(t *testing.T, bs, nblocks, jlen int, incompat uint32) (*memDev, []Extent) {
	t.Helper()
	d := &memDev{b: make([]byte, bs*nblocks), limit: -1}
	half := uint64(jlen / 2)
	ext := []Extent{{0, 200, half}, {half, 1000, uint64(jlen) - half}}
	sb := make([]byte, bs)
	be.PutUint32(sb[0:], magic)
	be.PutUint32(sb[4:], typeSuperV2)
	be.PutUint32(sb[sbBlockSize:], uint32(bs))
	be.PutUint32(sb[sbMaxLen:], uint32(jlen))
	be.PutUint32(sb[sbFirst:], 1)
	be.PutUint32(sb[sbSequence:], 7)
	be.PutUint32(sb[sbIncompat:], incompat)
	copy(sb[sbUUID:], "0123456789abcdef")
	if incompat&(IncompatCsumV2|IncompatCsumV3) != 0 {
		sb[sbChecksumType] = ChecksumCRC32C
		be.PutUint32(sb[sbChecksum:], crc32c(^uint32(0), sb[:sbSize]))
	}
	copy(d.b[200*bs:], sb)
	return d, ext
}

// TestCommitCrashRecover commits transactions of every log format (one
// block beginning with the jbd2 magic, so escaped) and cuts the power
// after each write of the commit in turn: after recovery every block of
// the transaction holds either its old or its new bytes, all of them the
// same one, and the new ones from the write of the commit block on.
func TestCommitCrashRecover(t *testing.T) {
	const bs, nblocks, jlen = 1024, 2048, 64
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(1, uint64(f.incompat)))
			targets := []uint64{50, 51, 52, 700, 1500}
			newData := map[uint64][]byte{}
			for i, b := range targets {
				p := make([]byte, bs)
				for k := range p {
					p[k] = byte(rnd.Uint32())
				}
				if i == 1 {
					be.PutUint32(p, magic) // logged escaped
				}
				newData[b] = p
			}
			base, ext := newLog(t, bs, nblocks, jlen, f.incompat)
			for _, b := range targets {
				for k := 0; k < bs; k++ {
					base.b[int(b)*bs+k] = byte(b)
				}
			}
			sawNew, sawOld := false, false
			for cut := 0; ; cut++ {
				d := &memDev{b: bytes.Clone(base.b), limit: cut}
				j, err := Open(d, bs, ext)
				if err != nil {
					t.Fatal(err)
				}
				tx := NewTransaction(d, bs)
				for _, b := range targets {
					tx.WriteAt(newData[b], int64(b)*bs)
				}
				cerr := tx.Commit(j, time.Unix(1700000000, 5))
				d.limit = -1
				j2, err := Open(d, bs, ext)
				if err != nil {
					t.Fatalf("cut %d: reopen: %v", cut, err)
				}
				if _, err := j2.Recover(nblocks); err != nil {
					t.Fatalf("cut %d: recover: %v", cut, err)
				}
				if j2.NeedsRecovery() {
					t.Fatalf("cut %d: log not empty after recovery", cut)
				}
				isNew := bytes.Equal(d.b[targets[0]*bs:][:bs], newData[targets[0]])
				for _, b := range targets {
					got := d.b[b*bs:][:bs]
					if isNew && !bytes.Equal(got, newData[b]) || !isNew && got[0] != byte(b) {
						t.Fatalf("cut %d: block %d torn (new %v)", cut, b, isNew)
					}
				}
				sawNew, sawOld = sawNew || isNew, sawOld || !isNew
				if cerr == nil {
					if !isNew {
						t.Fatalf("commit returned nil without the new blocks")
					}
					break
				}
			}
			if !sawNew || !sawOld {
				t.Errorf("crash points saw new %v, old %v", sawNew, sawOld)
			}
		})
	}
}

// TestRecoverRevoke logs block B in one transaction and revokes it in a
// later one: the replay leaves B alone, and replays the others.
func TestRecoverRevoke(t *testing.T) {
	const bs = 1024
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			d, ext, j := logTwo(t, f.incompat)
			writeRevoke(t, j, 61)
			j2, err := Open(d, bs, ext)
			if err != nil {
				t.Fatal(err)
			}
			n, err := j2.Recover(2048)
			if err != nil || n != 2 {
				t.Fatalf("recover: %d, %v", n, err)
			}
			if d.b[60*bs] != 1 || d.b[61*bs] != 0 {
				t.Errorf("block 60 %d (want 1), block 61 %d (want 0: revoked)", d.b[60*bs], d.b[61*bs])
			}
			if j2.Sequence() != 7+2+1 {
				t.Errorf("next sequence %d, want %d", j2.Sequence(), 7+2+1)
			}
		})
	}
}

// logTwo makes a log of format incompat holding one transaction, not
// checkpointed, that writes 1s to block 60 and 2s to block 61.
func logTwo(t *testing.T, incompat uint32) (*memDev, []Extent, *Journal) {
	t.Helper()
	const bs = 1024
	d, ext := newLog(t, bs, 2048, 64, incompat)
	j, err := Open(d, bs, ext)
	if err != nil {
		t.Fatal(err)
	}
	tx := NewTransaction(d, bs)
	tx.WriteAt(bytes.Repeat([]byte{1}, bs), 60*bs)
	tx.WriteAt(bytes.Repeat([]byte{2}, bs), 61*bs)
	if err := j.log(tx, tx.list(), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	return d, ext, j
}

// writeRevoke appends, after the transaction j.log wrote last, a
// transaction of one revoke block naming blk and a commit block.
func writeRevoke(t *testing.T, j *Journal, blk uint64) {
	t.Helper()
	// j.log wrote from j.first: descriptor, blocks, commit.
	pos := uint64(j.first)
	buf := make([]byte, j.bs)
	for {
		j.readBlock(pos, buf)
		pos++
		if be.Uint32(buf[4:]) == typeCommit {
			break
		}
	}
	seq := j.seq
	r := make([]byte, j.bs)
	be.PutUint32(r[0:], magic)
	be.PutUint32(r[4:], typeRevoke)
	be.PutUint32(r[8:], seq)
	if j.incompat&Incompat64bit != 0 {
		be.PutUint64(r[16:], blk)
		be.PutUint32(r[12:], 24)
	} else {
		be.PutUint32(r[16:], uint32(blk))
		be.PutUint32(r[12:], 20)
	}
	if j.csum != 0 {
		be.PutUint32(r[j.bs-4:], crc32c(j.seed, r))
	}
	j.writeBlock(pos, r)
	c := make([]byte, j.bs)
	be.PutUint32(c[0:], magic)
	be.PutUint32(c[4:], typeCommit)
	be.PutUint32(c[8:], seq)
	if j.csum != 0 {
		be.PutUint32(c[0x10:], crc32c(j.seed, c))
	}
	j.writeBlock(pos+1, c)
}

// TestRecoverBadTag damages a logged block: under csum v2 and v3 it is
// nothing is written and Recover reports EBADMSG; without checksums it
// is replayed as it is.
func TestRecoverBadTag(t *testing.T) {
	const bs = 1024
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			d, ext, j := logTwo(t, f.incompat)
			// The log: descriptor at 1, block 60 at 2, block 61 at 3.
			d.b[int(j.devBlock(3))*bs+5] ^= 0xFF
			j2, _ := Open(d, bs, ext)
			_, err := j2.Recover(2048)
			if f.incompat&(IncompatCsumV2|IncompatCsumV3) == 0 {
				if err != nil || d.b[61*bs] != 2 || d.b[61*bs+5] != 2^0xFF {
					t.Errorf("no checksums: %v, block 61 not replayed as logged", err)
				}
				return
			}
			if !errors.Is(err, syscall.EBADMSG) {
				t.Errorf("recover: %v, want EBADMSG", err)
			}
			if d.b[60*bs] != 0 || d.b[61*bs] != 0 {
				t.Errorf("block 60 %d, block 61 %d (want 0: a corrupt log writes nothing)", d.b[60*bs], d.b[61*bs])
			}
		})
	}
}

// TestRecoverWraps replays a transaction that runs past the end of the
// log into its start.
func TestRecoverWraps(t *testing.T) {
	const bs = 1024
	d, ext := newLog(t, bs, 2048, 16, IncompatRevoke|IncompatCsumV3)
	j, err := Open(d, bs, ext)
	if err != nil {
		t.Fatal(err)
	}
	// Log at the start, then move the log to start near the end: copy
	// the blocks so that the transaction begins at log block 13.
	tx := NewTransaction(d, bs)
	for i := 0; i < 5; i++ {
		tx.WriteAt(bytes.Repeat([]byte{byte(10 + i)}, bs), int64(70+i)*bs)
	}
	if err := j.log(tx, tx.list(), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, bs)
	var logged [][]byte
	for lb := uint64(1); lb <= 7; lb++ {
		j.readBlock(lb, buf)
		logged = append(logged, bytes.Clone(buf))
		j.writeBlock(lb, make([]byte, bs))
	}
	for i, b := range logged {
		j.writeBlock(uint64(13+i-1)%15+1, b) // 13, 14, 15, 1, 2...
	}
	j.SetSequence(7)
	j.WriteSuper(13)
	j2, _ := Open(d, bs, ext)
	if n, err := j2.Recover(2048); n != 1 || err != nil {
		t.Fatalf("recover: %d, %v", n, err)
	}
	for i := 0; i < 5; i++ {
		if d.b[(70+i)*bs] != byte(10+i) {
			t.Errorf("block %d: %d", 70+i, d.b[(70+i)*bs])
		}
	}
}

// TestRecoverOutside refuses a log naming a block past the device,
// before writing anything.
func TestRecoverOutside(t *testing.T) {
	const bs = 1024
	d, ext := newLog(t, bs, 2048, 64, IncompatRevoke)
	j, _ := Open(d, bs, ext)
	tx := NewTransaction(d, bs)
	tx.WriteAt(bytes.Repeat([]byte{1}, bs), 60*bs)
	tx.WriteAt(bytes.Repeat([]byte{1}, bs), 1900*bs)
	if err := j.log(tx, tx.list(), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	before := bytes.Clone(d.b)
	j2, _ := Open(d, bs, ext)
	if _, err := j2.Recover(1500); !errors.Is(err, syscall.EUCLEAN) {
		t.Errorf("recover: %v, want EUCLEAN", err)
	}
	if !bytes.Equal(before, d.b) {
		t.Errorf("a refused log changed the device")
	}
}

// TestOpenRefuses checks the superblocks Open refuses, and that it
// names the feature.
func TestOpenRefuses(t *testing.T) {
	const bs = 1024
	for _, tc := range []struct {
		name   string
		change func(sb []byte)
		want   error
	}{
		{"fast-commit", func(sb []byte) { be.PutUint32(sb[sbIncompat:], IncompatFastCommit) }, syscall.EINVAL},
		{"async-commit", func(sb []byte) { be.PutUint32(sb[sbIncompat:], IncompatAsyncCommit) }, syscall.EINVAL},
		{"magic", func(sb []byte) { sb[0] ^= 1 }, syscall.EUCLEAN},
		{"block-size", func(sb []byte) { be.PutUint32(sb[sbBlockSize:], 4096) }, syscall.EUCLEAN},
		{"first", func(sb []byte) { be.PutUint32(sb[sbFirst:], 64) }, syscall.EUCLEAN},
		{"csum", func(sb []byte) { sb[sbSequence] ^= 1 }, syscall.EBADMSG},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ext := newLog(t, bs, 2048, 64, IncompatCsumV3)
			tc.change(d.b[200*bs:])
			if _, err := Open(d, bs, ext); !errors.Is(err, tc.want) {
				t.Errorf("Open: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestTransactionReads checks that reads through a transaction see its
// blocks, across block boundaries, and the device elsewhere.
func TestTransactionReads(t *testing.T) {
	const bs = 1024
	d := &memDev{b: make([]byte, 64*bs), limit: -1}
	for i := range d.b {
		d.b[i] = byte(i / bs)
	}
	tx := NewTransaction(d, bs)
	tx.WriteAt([]byte{0xAA, 0xBB}, 5*bs+bs-1) // the end of 5, the start of 6
	tx.WriteAt(bytes.Repeat([]byte{0xCC}, bs), 9*bs)
	p := make([]byte, 8*bs)
	if n, err := tx.ReadAt(p, 3*bs); n != len(p) || err != nil {
		t.Fatalf("ReadAt: %d, %v", n, err)
	}
	for i := range p {
		want := byte(3 + i/bs)
		switch off := 3*bs + i; {
		case off == 6*bs-1:
			want = 0xAA
		case off == 6*bs:
			want = 0xBB
		case off/bs == 9:
			want = 0xCC
		}
		if p[i] != want {
			t.Fatalf("byte %d: %#x, want %#x", 3*bs+i, p[i], want)
		}
	}
	if d.b[6*bs] != 6 {
		t.Errorf("the device changed before the commit")
	}
	tx.Forget(9*bs, 1)
	if b := make([]byte, bs); tx.ReadBlock(9, b) {
		t.Errorf("Forget kept block 9")
	}
	if err := tx.Commit(nil, time.Time{}); err != nil || tx.Len() != 0 {
		t.Fatalf("commit in place: %v, %d left", err, tx.Len())
	}
	if d.b[6*bs-1] != 0xAA || d.b[6*bs] != 0xBB || d.b[9*bs] != 9 {
		t.Errorf("in place: %#x %#x %#x", d.b[6*bs-1], d.b[6*bs], d.b[9*bs])
	}
}

func ExampleTransaction_Commit() {
	const bs = 1024
	d := &memDev{b: make([]byte, 16*bs), limit: -1}
	tx := NewTransaction(d, bs)
	tx.WriteAt([]byte("metadata"), 3*bs)
	fmt.Println(tx.Len(), d.b[3*bs] == 0)
	tx.Commit(nil, time.Time{}) // no journal: in place
	fmt.Println(tx.Len(), string(d.b[3*bs:3*bs+8]))
	// Output:
	// 1 true
	// 0 metadata
}
