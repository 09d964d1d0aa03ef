package disk

// Read-write support: a Writer changes a volume in place. Every
// operation leaves the structures e2fsck checks consistent (bitmaps,
// group descriptor and superblock free counts, link counts, sizes,
// i_blocks and every metadata_csum checksum) and is one jbd2 transaction
// or part of one (rwjournal.go), so a crash at any write recovers to a
// consistent volume.
//
// Scope (what OpenWriter accepts, checked by writeRefusal):
//   - extents (extent trees of any depth, rwextent.go, for regular files
//     and directories; unwritten extents and fallocate, rwfalloc.go),
//     64bit,
//     flex_bg, meta_bg, sparse_super, sparse_super2, large_file,
//     huge_file, dir_nlink, extra_isize, metadata_csum (+csum_seed) or
//     gdt_csum, has_journal (internal, jbd2 v2 with revoke, 64bit and
//     csum v3; replayed at open), dir_index (htree directories kept as
//     Linux keeps them, rwhtree.go; a directory outgrowing its first
//     block becomes one; names are looked up through an in-memory name
//     index).
//   - block maps (rwblockmap.go): ext2, ext3 and ext4 inodes without
//     EXTENTS_FL (direct, single, double and triple indirect blocks); new
//     inodes are block-mapped on volumes without the extents feature.
//   - inline_data (rwinline.go): files and directories kept in the inode
//     and moved to a block when the kernel moves them (fs/ext4/inline.c).
//   - refused with a *FeatureError naming the feature:
//     bigalloc, encrypt, casefold, ea_inode, mmp, quota, project, verity,
//     orphan_present without orphan_file, needs_recovery without a
//     journal, async_commit and fast_commit journals, external
//     journals, and volumes without filetype.
//   - orphan_file (rworphanfile.go): orphans in the orphan file's slots,
//     the s_last_orphan list when it is full (rworphan.go).
//   - BLOCK_UNINIT groups get their bitmap built (ext4_init_block_bitmap)
//     when first allocated from.
//
// Locking: mu serialises every operation, and every read of a writable
// volume goes through it too (View, ReadAt), so no reader sees a change
// half made; the reader's inode cache entry is dropped after every inode
// write.

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/fs/jbd2"
)

// WriteDevice is a Device that can also be written: WriteAt has
// io.WriterAt's contract.
type WriteDevice interface {
	Device
	WriteAt(p []byte, off int64) (int, error)
}

// Group descriptor flags (EXT4_BG_*).
const (
	bgInodeUninit = 0x1
	bgBlockUninit = 0x2
)

// Features refused for writing, with their names.
var writeRefusedIncompat = []struct {
	bit  uint32
	name string
}{
	{incompatRecover, "needs_recovery"},
	{incompatEncrypt, "encrypt"},
	{incompatCasefold, "casefold"},
	{incompatEAInode, "ea_inode"},
	{incompatMMP, "mmp"},
	{incompatDirData, "dirdata"},
}

var writeRefusedRocompat = []struct {
	bit  uint32
	name string
}{
	{rocompatBigalloc, "bigalloc"},
	{0x100, "quota"},
	{0x1000, "readonly"},
	{0x2000, "project"},
	{0x8000, "verity"},
	{0x80, "has_snapshot"},
}

// writeRefusal names the first feature of v that the Writer cannot keep
// correct, or "".
func (v *Volume) writeRefusal(journal bool) string {
	for _, f := range writeRefusedIncompat {
		if v.incompat&f.bit != 0 && !(f.bit == incompatRecover && journal) {
			return f.name
		}
	}
	for _, f := range writeRefusedRocompat {
		if v.rocompat&f.bit != 0 {
			return f.name
		}
	}
	if v.incompat&incompatFiletype == 0 {
		return "no filetype"
	}
	if !v.linuxOS {
		return "creator OS other than Linux"
	}
	if v.rocompat&rocompatOrphanPresent != 0 && v.compat&compatOrphanFile == 0 {
		return "orphan_present without orphan_file"
	}
	return ""
}

// Writer changes a volume. Every method is atomic with respect to the
// others (mu) and leaves the volume e2fsck-clean when it returns, even
// after an error.
type Writer struct {
	v    *Volume
	jdev *journalDev       // the device, under the journal and the transaction
	tx   *jbd2.Transaction // the running transaction: metadata writes go here
	j    *jbd2.Journal     // nil without has_journal
	// dax, if set, is the device's direct access (a dax mount): file
	// data is copied to and from device memory (rwdax.go); mem is the
	// whole device's view when one could be taken.
	dax block.DirectAccessor
	mem []byte

	// Now gives the timestamps of changes; time.Now by default.
	Now func() time.Time

	// Batch lets a transaction span operations until it is big, old
	// (CommitInterval, the commit= option, 5 s by default) or synced
	// (Sync, Close); off, every operation commits before it returns.
	// Set both before the first operation.
	Batch          bool
	CommitInterval time.Duration
	lastCommit     time.Time
	// syncOp: the running operation changed an inode with the sync
	// flag, or a directory with dirsync (IS_SYNC, IS_DIRSYNC): unlock
	// commits and flushes before the operation returns, as
	// ext4_handle_sync makes its handle wait for the commit.
	syncOp bool
	// pendingFree holds blocks freed by the running transaction: they
	// are not allocated again until it commits, so data written to a
	// new owner never lands in a block the committed state still gives
	// to its old one (as mballoc avoids blocks freed in the running
	// transaction).
	pendingFree map[uint64]struct{}

	// mu protects everything below and serialises operations. Readers
	// beside the Writer hold it shared when they fall back to it
	// (live.go).
	mu     sync.RWMutex
	sb     []byte   // the primary superblock, 1024 bytes
	gd     [][]byte // descriptor blocks, as on disk
	bbm    map[uint32][]byte
	ibm    map[uint32][]byte
	gen    uint32
	closed bool
	err    error            // a failed commit: no more changes
	dirs   map[uint32]*wdir // name indexes of directories (rwdir.go)
	dx     *dxScratch       // htree insertion buffers (rwhtree.go)
	held   map[uint32]int   // open counts (Hold)
	orphan map[uint32]bool  // unlinked while held: freed at the last Unhold
	// orphanPrev holds, for each inode on the on-disk orphan list, the
	// one before it (0: ino is the head, s_last_orphan) (rworphan.go).
	orphanPrev map[uint32]uint32
	// linkable are the orphans made unnamed by TmpfileAs that LinkAs may
	// still name (rwtmpfile.go).
	linkable map[uint32]bool
	xp       xpath  // the extent path of the running change (rwextent.go)
	dbuf     []byte // one block: partial data blocks (rwfile.go)
	iraw     []byte // the inode of the running WriteAt/ReadAt

	// rv is the Volume that reads beside the Writer (Reader), whose Refs
	// its operations move (live.go); nil without one.
	rv *Volume

	// xcache: xattr blocks by h_hash, the kernel's mbcache (rwxattr.go).
	xcache map[uint32][]uint64
	// bmaps caches the runs of block maps (rwblockmap.go); under mu.
	bmaps map[uint32]*bmCache
	// newInline: new regular files with EXT4_STATE_MAY_INLINE_DATA that
	// have no inline data yet (rwinline.go); under mu.
	newInline map[uint32]bool
	// ihint[g]: every inode of group g below it is in use (allocInode
	// starts there and makes the map; freeInode lowers it).
	ihint map[uint32]uint32

	// appendMu serialises Append's size read and write; taken before mu.
	appendMu sync.Mutex

	// Caller is who operations run for where the root-reserved blocks
	// matter (rwspace.go), unless the operation names its own (lockAs);
	// the zero value is root. Set it before the first operation.
	Caller Caller
	// onRelease is OnRelease's function, under mu.
	onRelease func(ino uint32)
	// MountPoint is what s_last_mounted gets at the first open of a
	// regular file through the read-write mount (rwsuper.go); empty
	// leaves it alone. Set it before the first operation.
	MountPoint string
	// sampled: s_last_mounted was looked at (rwsuper.go).
	sampled atomic.Bool
	// mounted: OpenWriter did the mount's superblock bookkeeping;
	// mountState is s_state and kbStart s_kbytes_written as they were
	// then (rwsuper.go). Set before OpenWriter returns.
	mounted    bool
	mountState uint16
	kbStart    uint64

	// ofile is the orphan file, nil without orphan_file (rworphanfile.go).
	// Under mu.
	ofile *orphanFile

	// cur is the caller of the running operation (nil: Caller). Under mu;
	// lockAs sets it, unlock clears it.
	cur *Caller
	// aclass is what the running allocation may take, tclass what its
	// extent tree blocks may (rwspace.go); allocNormal between
	// operations. Under mu.
	aclass, tclass allocClass
	// maxFolio, when not 0, is one more than the largest folio order the
	// write model assumes the page cache gets (rwspace.go).
	maxFolio int

	// Data and Errors are the data= and errors= modes (rwmodes.go); set
	// them before the first operation.
	Data   DataMode
	Errors ErrorBehavior
	// errorsRO: err is a remount-ro after an error (ReportError), which
	// Close does not report.
	errorsRO bool
	// stopCommits ends StartCommitter's goroutine; closed by Close.
	stopCommits chan struct{}
}

// OpenWriter opens dev for reading and writing. The volume's metadata is
// read without the buffer cache (opt.Cache is ignored), so a Volume read
// through w.Volume() always sees what w wrote.
//
// Errors: those of Open; a *FeatureError (EINVAL) naming a feature the
// Writer cannot keep correct (see the file comment).
func OpenWriter(dev WriteDevice, opt Options) (*Writer, error) {
	opt.Cache, opt.CacheDevice = nil, nil
	opt.NoChecksums = false
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	jdev := &journalDev{dev: dev}
	sb := make([]byte, sbSize)
	if dev.Size() >= sbOffset+sbSize {
		if err := readFull(dev, sb, sbOffset); err != nil {
			return nil, err
		}
	}
	bs := 1024
	if logbs := le32(sb, 0x18); logbs <= 6 {
		bs <<= logbs // else Open refuses the volume
	}
	tx := jbd2.NewTransaction(jdev, bs)
	v, err := Open(txDevice{tx, dev.Size()}, opt)
	if err != nil {
		return nil, err
	}
	var j *jbd2.Journal
	if !opt.NoLoad {
		if j, err = openJournal(v, jdev, sb); err != nil {
			return nil, err
		}
	}
	// Refuse before any write, the replay's included.
	if f := v.writeRefusal(j != nil || opt.unreplayed); f != "" {
		return nil, &FeatureError{Feature: f + " (read-write)"}
	}
	if j != nil && (v.incompat&incompatRecover != 0 || j.NeedsRecovery()) {
		// The replay writes around the count of s_kbytes_written.
		rj, err := openJournal(v, &journalDev{dev: dev, uncounted: true}, sb)
		if err != nil {
			return nil, err
		}
		n, err := rj.Recover(v.blocks)
		if err != nil {
			return nil, fmt.Errorf("ext4: journal recovery: %w", journalErr(le32(sb, 0xE0), err))
		}
		opt.Logf("ext4: recovered %d journal transactions", n)
		// The replay may have rewritten anything: read the volume again.
		if v, err = Open(txDevice{tx, dev.Size()}, opt); err != nil {
			return nil, err
		}
		if err := readFull(dev, sb, sbOffset); err != nil {
			return nil, err
		}
		if j, err = openJournal(v, jdev, sb); err != nil {
			return nil, err
		}
		if j == nil {
			return nil, corrupt(0, "journal gone after its replay")
		}
	}
	if f := v.writeRefusal(j != nil || opt.unreplayed); f != "" {
		return nil, &FeatureError{Feature: f + " (read-write)"}
	}
	w := &Writer{v: v, jdev: jdev, tx: tx, j: j, Now: time.Now, bbm: map[uint32][]byte{}, ibm: map[uint32][]byte{}, orphan: map[uint32]bool{}, pendingFree: map[uint64]struct{}{}, CommitInterval: 5 * time.Second}
	v.openUnlinked = w.isOpenUnlinked
	w.sb = sb
	perBlock := v.bs / uint64(v.descSize)
	nblocks := (uint64(v.groups) + perBlock - 1) / perBlock
	for nr := uint64(0); nr < nblocks; nr++ {
		b := make([]byte, v.bs)
		if err := v.readBlock(v.descBlock(nr), b); err != nil {
			return nil, err
		}
		w.gd = append(w.gd, b)
	}
	for g := uint32(0); g < v.groups; g++ {
		if !v.groupDescCsumOK(g, w.desc(g)) {
			return nil, badCsum(0, "group descriptor %d", g)
		}
	}
	w.gen = le32(w.sb, 0x1A0) ^ uint32(time.Now().UnixNano()) // any value; e2fsck does not check it
	// The orphan file is checked before anything is written: a damaged
	// one refuses the volume as it is.
	if v.compat&compatOrphanFile != 0 {
		if err := w.openOrphanFile(); err != nil { // rworphanfile.go
			return nil, err
		}
	}
	if !opt.readOnlyMount {
		w.setupSuper() // rwsuper.go
	}
	if j != nil {
		// The log is empty now; the superblock says the volume is in use
		// (needs_recovery) until Close, as the kernel's mount does.
		clearJournalErr(sb, j, opt.Logf)
		if !opt.readOnlyMount {
			w.setJournalFeatures() // rwsuper.go
		}
		if err := j.WriteSuper(0); err != nil {
			return nil, err
		}
		binary.LittleEndian.PutUint32(w.sb[0x60:], le32(w.sb, 0x60)|incompatRecover)
	}
	if j != nil || w.mounted {
		w.mu.Lock()
		w.writeSuper()
		w.unlock()
		if w.err != nil {
			return nil, w.err
		}
	}
	if err := w.cleanupOrphans(); err != nil {
		return nil, err
	}
	return w, nil
}

// Volume returns the volume w changes, for reading.
func (w *Writer) Volume() *Volume { return w.v }

// Close ends writing: it commits, and marks a journalled volume clean
// (needs_recovery cleared). The volume stays readable through Volume.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.endOps() // live.go
	if w.closed {
		return nil
	}
	w.closed = true
	if w.stopCommits != nil {
		close(w.stopCommits)
	}
	if w.errorsRO {
		return nil // read-only after an error: nothing more is written
	}
	if w.err != nil {
		return w.err
	}
	if err := w.freeOrphans(); err != nil {
		return err
	}
	w.putSuper() // rwsuper.go
	if w.j != nil {
		binary.LittleEndian.PutUint32(w.sb[0x60:], le32(w.sb, 0x60)&^incompatRecover)
	}
	if w.j != nil || w.mounted {
		if err := w.writeSuper(); err != nil {
			return err
		}
	}
	return w.commit()
}

// lockAs is lock for an operation that acts for c (a nil c acts for
// Caller): the blocks reserved for root are c's to take when c may
// (rootBlocksOK). The read-write mount passes the caller's credentials
// this way.
func (w *Writer) lockAs(c *Caller) error {
	if err := w.lock(); err != nil {
		return err
	}
	w.cur = c
	return nil
}

func (w *Writer) lock() error {
	w.mu.Lock()
	if w.closed || w.err != nil {
		w.mu.Unlock()
		return syscall.EROFS
	}
	// Blocks freed in the running transaction cannot be reused before it
	// commits; commit first when they are a large share of the free ones.
	if len(w.pendingFree) > 0 && uint64(len(w.pendingFree))*2 >= w.sbFreeBlocks() {
		w.commitOrFail()
	}
	return nil
}

// desc returns group g's descriptor bytes (aliasing w.gd).
func (w *Writer) desc(g uint32) []byte {
	per := uint32(w.v.bs) / w.v.descSize
	b := w.gd[g/per]
	o := (g % per) * w.v.descSize
	return b[o : o+w.v.descSize]
}

func (w *Writer) descField(g uint32, lo, hi int, bits int) uint64 {
	d := w.desc(g)
	var x uint64
	if bits == 16 {
		x = uint64(le16(d, lo))
		if w.v.descSize >= 64 && hi >= 0 {
			x |= uint64(le16(d, hi)) << 16
		}
	} else {
		x = uint64(le32(d, lo))
		if w.v.descSize >= 64 && hi >= 0 {
			x |= uint64(le32(d, hi)) << 32
		}
	}
	return x
}

func (w *Writer) setDescField(g uint32, lo, hi int, bits int, x uint64) {
	d := w.desc(g)
	if bits == 16 {
		binary.LittleEndian.PutUint16(d[lo:], uint16(x))
		if w.v.descSize >= 64 && hi >= 0 {
			binary.LittleEndian.PutUint16(d[hi:], uint16(x>>16))
		}
	} else {
		binary.LittleEndian.PutUint32(d[lo:], uint32(x))
		if w.v.descSize >= 64 && hi >= 0 {
			binary.LittleEndian.PutUint32(d[hi:], uint32(x>>32))
		}
	}
}

// Descriptor fields: offsets of the low and high halves.
const (
	gdBlockBitmap = 0x0
	gdInodeBitmap = 0x4
	gdFreeBlocks  = 0xC
	gdFreeInodes  = 0xE
	gdUsedDirs    = 0x10
	gdFlags       = 0x12
	gdBBCsum      = 0x18
	gdIBCsum      = 0x1A
	gdItUnused    = 0x1C
	gdCsum        = 0x1E
)

// writeDesc recomputes group g's checksum and writes its descriptor block.
func (w *Writer) writeDesc(g uint32) error {
	v := w.v
	d := w.desc(g)
	var le [4]byte
	binary.LittleEndian.PutUint32(le[:], g)
	switch {
	case v.rocompat&rocompatMetadataCsum != 0:
		c := crc32cU32(v.csumSeed, g)
		c = crc32c(c, d[:0x1E])
		c = crc32c(c, zero8[:2])
		c = crc32c(c, d[0x20:])
		binary.LittleEndian.PutUint16(d[gdCsum:], uint16(c))
	case v.rocompat&rocompatGdtCsum != 0:
		c := crc16(0xFFFF, v.info.UUID[:])
		c = crc16(c, le[:])
		c = crc16(c, d[:0x1E])
		if len(d) > 0x20 {
			c = crc16(c, d[0x20:])
		}
		binary.LittleEndian.PutUint16(d[gdCsum:], c)
	}
	per := uint32(v.bs) / v.descSize
	nr := uint64(g / per)
	return w.writeAt(w.gd[nr], int64(v.descBlock(nr)<<v.bsBits))
}

// writeSuper recomputes the superblock checksum and writes it.
func (w *Writer) writeSuper() error {
	w.updateSuper(w.sb) // s_wtime, s_kbytes_written (rwsuper.go)
	if w.v.rocompat&rocompatMetadataCsum != 0 {
		binary.LittleEndian.PutUint32(w.sb[0x3FC:], crc32c(^uint32(0), w.sb[:0x3FC]))
	}
	return w.writeAt(w.sb, sbOffset)
}

func (w *Writer) writeAt(p []byte, off int64) error {
	n, err := w.tx.WriteAt(p, off)
	if err == nil && n < len(p) {
		err = syscall.EIO
	}
	return err
}

func (w *Writer) sbFreeBlocks() uint64 {
	return uint64(le32(w.sb, 0xC)) | uint64(le32(w.sb, 0x158))<<32*b2u(w.v.incompat&incompat64bit != 0)
}

func (w *Writer) setSbFreeBlocks(n uint64) {
	binary.LittleEndian.PutUint32(w.sb[0xC:], uint32(n))
	if w.v.incompat&incompat64bit != 0 {
		binary.LittleEndian.PutUint32(w.sb[0x158:], uint32(n>>32))
	}
	w.v.info.FreeBlocks = n
}

func (w *Writer) addSbFreeInodes(d int) {
	n := uint32(int64(le32(w.sb, 0x10)) + int64(d))
	binary.LittleEndian.PutUint32(w.sb[0x10:], n)
	w.v.info.FreeInodes = n
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// ---- inodes ----

// inodeOff is the byte offset of inode ino in its inode table.
func (w *Writer) inodeOff(ino uint32) int64 {
	v := w.v
	g := (ino - 1) / v.ipg
	idx := uint64((ino - 1) % v.ipg)
	return int64(v.itable[g]<<v.bsBits + idx*uint64(v.inodeSize))
}

// getInode reads the raw inode ino, checking its checksum.
func (w *Writer) getInode(ino uint32) ([]byte, error) {
	if ino == 0 || ino > w.v.inodes {
		return nil, corrupt(ino, "inode number out of range")
	}
	raw := make([]byte, w.v.inodeSize)
	if err := w.v.readMeta(raw, w.inodeOff(ino)); err != nil {
		return nil, err
	}
	if _, err := w.v.parseInode(ino, raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// inodeSeed is the checksum seed of an inode: crc32c(fs seed, ino, gen).
func (w *Writer) inodeSeed(ino uint32, raw []byte) uint32 {
	return crc32cU32(crc32cU32(w.v.csumSeed, ino), le32(raw, 0x64))
}

func extraEnd(raw []byte) int {
	if len(raw) <= 128 {
		return 128
	}
	return 128 + int(le16(raw, 0x80))
}

// putInode sets raw's checksum, writes it and drops the reader's copy.
func (w *Writer) putInode(ino uint32, raw []byte) error {
	w.begin(ino) // live.go
	if fl := iFlags(raw); fl&flSync != 0 || fl&flDirsync != 0 && iMode(raw)&S_IFMT == S_IFDIR {
		w.syncOp = true
	}
	v := w.v
	if v.rocompat&rocompatMetadataCsum != 0 {
		hi := len(raw) > 128 && extraEnd(raw) >= 0x84
		raw[0x7C], raw[0x7D] = 0, 0
		if hi {
			raw[0x82], raw[0x83] = 0, 0
		}
		c := crc32c(w.inodeSeed(ino, raw), raw)
		binary.LittleEndian.PutUint16(raw[0x7C:], uint16(c))
		if hi {
			binary.LittleEndian.PutUint16(raw[0x82:], uint16(c>>16))
		}
	}
	if err := w.writeAt(raw, w.inodeOff(ino)); err != nil {
		return err
	}
	v.mu.Lock()
	delete(v.icache, ino)
	v.mu.Unlock()
	return nil
}

// setTime stores t in the timestamp at off with its _extra word at xoff
// (when it fits): epoch bits and nanoseconds, as ext4_encode_extra_time.
func setTime(raw []byte, off, xoff int, t time.Time) {
	sec := t.Unix()
	binary.LittleEndian.PutUint32(raw[off:], uint32(int32(sec)))
	if xoff+4 <= extraEnd(raw) {
		epoch := uint32((sec-int64(int32(sec)))>>32) & 3
		binary.LittleEndian.PutUint32(raw[xoff:], epoch|uint32(t.Nanosecond())<<2)
	}
}

const (
	tCtime = iota
	tMtime
	tAtime
	tCrtime
)

var timeOffs = [4][2]int{{0x0C, 0x84}, {0x10, 0x88}, {0x08, 0x8C}, {0x90, 0x94}}

func touch(raw []byte, t time.Time, which ...int) {
	for _, k := range which {
		o := timeOffs[k]
		if k == tCrtime && o[0]+4 > extraEnd(raw) {
			continue
		}
		setTime(raw, o[0], o[1], t)
	}
}

func iSize(raw []byte) uint64 { return uint64(le32(raw, 0x4)) | uint64(le32(raw, 0x6C))<<32 }

func setISize(raw []byte, n uint64) {
	binary.LittleEndian.PutUint32(raw[0x4:], uint32(n))
	binary.LittleEndian.PutUint32(raw[0x6C:], uint32(n>>32))
}

func iLinks(raw []byte) uint32 { return uint32(le16(raw, 0x1A)) }

func setILinks(raw []byte, n uint32) { binary.LittleEndian.PutUint16(raw[0x1A:], uint16(n)) }

func iMode(raw []byte) uint32 { return uint32(le16(raw, 0)) }

func iFlags(raw []byte) uint32 { return le32(raw, 0x20) }

// iBlocks is i_blocks in 512-byte units (huge_file's block units are not
// written here: files stay below 2^32 sectors... or use the high word).
func (w *Writer) iBlocks(raw []byte) uint64 {
	n := uint64(le32(raw, 0x1C)) | uint64(le16(raw, 0x74))<<32
	if iFlags(raw)&FlagHugeFile != 0 {
		n <<= w.v.bsBits - 9
	}
	return n
}

func (w *Writer) addIBlocks(raw []byte, blocks int64) error {
	if iFlags(raw)&FlagHugeFile != 0 {
		return fmt.Errorf("ext4: huge_file inode: %w", syscall.EOPNOTSUPP)
	}
	n := uint64(int64(w.iBlocks(raw)) + blocks<<(w.v.bsBits-9))
	if n >= 1<<48 {
		return syscall.EFBIG
	}
	binary.LittleEndian.PutUint32(raw[0x1C:], uint32(n))
	binary.LittleEndian.PutUint16(raw[0x74:], uint16(n>>32))
	return nil
}
