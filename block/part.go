package block

// Partition tables, as Linux's block/partitions reads them (check.c,
// msdos.c, efi.c): the GUID partition table first, then the DOS (MBR)
// table with its extended and logical partitions. The numbering is the
// kernel's, so partition N here is loop0pN there:
//
//   - DOS: the four primary slots are 1-4 whether used or not; an
//     extended partition (types 0x05, 0x0f, 0x85) is a node of 2 sectors
//     (so that nobody makes a file system on it) and its logical
//     partitions follow from 5 in chain order; a slot whose boot flag is
//     neither 0 nor 0x80 means the sector is not a partition table (a FAT
//     boot sector, say).
//   - GPT: entry i is partition i+1; unused entries and entries outside
//     the disk are skipped. The header and the entry array must pass
//     their CRC32s, and the protective MBR must be there. Linux uses the
//     backup header only when booted with "gpt" (force_gpt); Options
//     selects that.
//   - A partition that starts past the end of the disk is dropped; one
//     that runs past it is cut at the end (blk_add_partition).
//
// The BSD, Solaris, Minix and UnixWare sub-tables inside DOS partitions
// are not read.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"unicode/utf16"

	"github.com/iovfs/iovfs/iov"
)

// Kinds of partition table, as sfdisk names them.
const (
	TableDOS = "dos"
	TableGPT = "gpt"
)

// ErrNoTable is returned by ReadTable for a disk without a partition
// table it recognises.
var ErrNoTable = errors.New("no partition table")

// maxPartitions is Linux's DISK_MAX_PARTS: partition numbers run 1 to 255.
const maxPartitions = 256

// A Partition is one entry of a partition table.
type Partition struct {
	// Number is the partition's number, from 1, as in loop0pN.
	Number int
	// Start and Size are in bytes.
	Start, Size int64
	// Type is the DOS system id (0x83...), or 0 on GPT.
	Type byte
	// TypeGUID, UUID and Name are GPT's (GUIDs in their usual text form).
	TypeGUID, UUID, Name string
	// Boot is the DOS boot flag; Attrs are GPT's attribute bits.
	Boot  bool
	Attrs uint64
	// Extended marks a DOS extended partition: its node covers only the
	// first sectors of the container (see the file comment).
	Extended bool
	// Truncated reports that the table says the partition runs past the
	// end of the disk and Size was cut there.
	Truncated bool
}

// A Table is a disk's partition table.
type Table struct {
	Kind string // TableDOS or TableGPT
	// ID is the disk identifier: 0x%08x for DOS, the disk GUID for GPT.
	ID string
	// SectorSize is the logical block size the table was read with.
	SectorSize int
	// Size is the disk's size in bytes.
	Size int64
	// FirstLBA and LastLBA are GPT's usable range.
	FirstLBA, LastLBA uint64
	// Backup reports a GPT read from its backup header because the
	// primary header or its entries were damaged.
	Backup bool
	// Parts are the partitions in number order.
	Parts []Partition
}

// Part returns the partition numbered n, or nil.
func (t *Table) Part(n int) *Partition {
	for i := range t.Parts {
		if t.Parts[i].Number == n {
			return &t.Parts[i]
		}
	}
	return nil
}

// ByName returns the GPT partitions whose name is name.
func (t *Table) ByName(name string) []Partition {
	var out []Partition
	for _, p := range t.Parts {
		if p.Name == name && name != "" {
			out = append(out, p)
		}
	}
	return out
}

// TableOptions change how ReadTable reads a table.
type TableOptions struct {
	// ForceGPT is Linux's "gpt" boot option: a GPT is read without a
	// protective MBR, and from the backup header at the disk's last
	// sector when the primary is damaged. GNU parted, gdisk and libblkid
	// always do the latter; the kernel without "gpt" does not, and then
	// finds no partitions on such a disk.
	ForceGPT bool
}

// ReadTable reads the partition table of a disk of size bytes with
// logical sectors of ss bytes through r. A disk without a table gives
// ErrNoTable; a read error is returned as it is (Linux then logs "unable
// to read partition table" and makes no partitions).
func ReadTable(r io.ReaderAt, size int64, ss int, o TableOptions) (*Table, error) {
	if !ValidSectorSize(ss) || size < 0 {
		return nil, errEINVAL
	}
	s := &scan{r: r, ss: int64(ss), size: size, sectors: size / int64(ss)}
	t, err := s.gpt(o.ForceGPT)
	if err == nil && t == nil {
		t, err = s.dos()
	}
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, ErrNoTable
	}
	t.SectorSize, t.Size = ss, size
	s.clip(t)
	return t, nil
}

// ReadDeviceTable is ReadTable on a block device.
func ReadDeviceTable(d Device, o TableOptions) (*Table, error) {
	return ReadTable(DeviceReaderAt(d), ReadEnd(d), d.SectorSize(), o)
}

// scan is one reading of a disk.
type scan struct {
	r       io.ReaderAt
	ss      int64 // logical sector size
	size    int64
	sectors int64 // whole logical sectors
}

// sector reads logical sector lba; past the end it gives nil and no
// error (read_part_sector refuses such reads).
func (s *scan) sector(lba uint64) ([]byte, error) {
	if lba >= uint64(s.sectors) {
		return nil, nil
	}
	b := make([]byte, s.ss)
	if _, err := s.r.ReadAt(b, int64(lba)*s.ss); err != nil {
		return nil, err
	}
	return b, nil
}

// clip drops partitions that start past the end of the disk and cuts
// those that run past it, as blk_add_partition does, and drops empty
// ones.
func (s *scan) clip(t *Table) {
	out := t.Parts[:0]
	for _, p := range t.Parts {
		if p.Size <= 0 || p.Start < 0 || p.Start >= s.size {
			continue
		}
		if p.Size > s.size-p.Start {
			p.Size, p.Truncated = s.size-p.Start, true
		}
		out = append(out, p)
	}
	t.Parts = out
}

// DOS (MBR) tables: msdos.c.

const (
	mbrSig       = 0x1fe
	mbrTable     = 0x1be
	typeGPT      = 0xee
	typeExtended = 0x05
	typeWin98Ext = 0x0f
	typeLinuxExt = 0x85
)

type mbrEntry struct {
	boot  byte
	typ   byte
	start uint32
	count uint32
}

func mbrEntries(b []byte) [4]mbrEntry {
	var e [4]mbrEntry
	for i := range e {
		p := b[mbrTable+16*i:]
		e[i] = mbrEntry{boot: p[0], typ: p[4], start: binary.LittleEndian.Uint32(p[8:]), count: binary.LittleEndian.Uint32(p[12:])}
	}
	return e
}

func hasMBRMagic(b []byte) bool { return b[mbrSig] == 0x55 && b[mbrSig+1] == 0xaa }

func isExtended(t byte) bool { return t == typeExtended || t == typeWin98Ext || t == typeLinuxExt }

// dos reads a DOS table (msdos_partition), or returns nil.
func (s *scan) dos() (*Table, error) {
	b, err := s.sector(0)
	if err != nil || len(b) < 512 || !hasMBRMagic(b) {
		return nil, err
	}
	ents := mbrEntries(b)
	for _, e := range ents {
		if e.boot != 0 && e.boot != 0x80 {
			// A FAT boot sector without a table (msdos_partition
			// returns 1 with no partitions for it) or not a table.
			return nil, nil
		}
	}
	for _, e := range ents {
		if e.typ == typeGPT {
			return nil, nil // a GPT disk: msdos ignores it
		}
	}
	t := &Table{Kind: TableDOS, ID: fmt.Sprintf("0x%08x", binary.LittleEndian.Uint32(b[0x1b8:]))}
	unit := s.ss / 512 // the kernel's sector_t is 512 bytes
	next := 5
	for i, e := range ents {
		if e.count == 0 {
			continue
		}
		start := int64(e.start) * unit * 512
		size := int64(e.count) * unit * 512
		if isExtended(e.typ) {
			// Two 512-byte sectors, or one logical block if larger.
			n := min(size, max(unit, 2)*512)
			t.Parts = append(t.Parts, Partition{Number: i + 1, Start: start, Size: n, Type: e.typ, Boot: e.boot == 0x80, Extended: true})
			if err := s.extended(t, uint64(e.start)*uint64(unit), uint64(e.count)*uint64(unit), &next); err != nil {
				return nil, err
			}
			continue
		}
		t.Parts = append(t.Parts, Partition{Number: i + 1, Start: start, Size: size, Type: e.typ, Boot: e.boot == 0x80})
	}
	sortParts(t.Parts)
	return t, nil
}

// extended follows the chain of extended boot records of the container
// at first (in 512-byte sectors) and adds its logical partitions
// (parse_extended). A link chain that finds no data partition in 100
// steps ends, as does one that reaches the partition limit.
func (s *scan) extended(t *Table, first, firstSize uint64, next *int) error {
	unit := uint64(s.ss / 512)
	this, thisSize := first, firstSize
	for loops := 1; ; loops++ {
		if loops > 100 || *next >= maxPartitions {
			return nil
		}
		b, err := s.sector(this / unit)
		if err != nil {
			return nil // read_part_sector failed: the chain ends
		}
		if len(b) < 512 || !hasMBRMagic(b) {
			return nil
		}
		ents := mbrEntries(b)
		for i, e := range ents {
			if e.count == 0 || isExtended(e.typ) {
				continue
			}
			offs := uint64(e.start) * unit
			size := uint64(e.count) * unit
			at := this + offs
			if i >= 2 {
				// The 3rd and 4th entries sometimes hold garbage.
				if offs+size > thisSize || at < first || at+size > first+firstSize {
					continue
				}
			}
			t.Parts = append(t.Parts, Partition{Number: *next, Start: int64(at) * 512, Size: int64(size) * 512, Type: e.typ, Boot: e.boot == 0x80})
			loops = 0
			if *next++; *next >= maxPartitions {
				return nil
			}
		}
		link := -1
		for i, e := range ents {
			if e.count != 0 && isExtended(e.typ) {
				link = i
				break
			}
		}
		if link < 0 {
			return nil
		}
		this = first + uint64(ents[link].start)*unit
		thisSize = uint64(ents[link].count) * unit
	}
}

func sortParts(ps []Partition) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].Number < ps[j-1].Number; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// GUID partition tables: efi.c.

const (
	gptSig       = "EFI PART"
	gptHeaderMin = 92
	gptEntrySize = 128
	// gptMaxEntryBytes bounds the entry array, as the kernel's kmalloc
	// limit does (KMALLOC_MAX_SIZE is larger; 1 MiB holds 8192 entries).
	gptMaxEntryBytes = 1 << 20
)

type gptHeader struct {
	myLBA, altLBA       uint64
	firstLBA, lastLBA   uint64
	diskGUID            [16]byte
	entriesLBA          uint64
	numEntries, entSize uint32
	entriesCRC          uint32
}

// gpt reads a GUID partition table (find_valid_gpt and efi_partition),
// or returns nil.
func (s *scan) gpt(force bool) (*Table, error) {
	if s.sectors < 2 {
		return nil, nil
	}
	last := uint64(s.sectors - 1)
	if !force {
		b, err := s.sector(0)
		if err != nil {
			return nil, err
		}
		if len(b) < 512 || !protectiveMBR(b) {
			return nil, nil
		}
	}
	ph, pents, err := s.gptAt(1, last)
	if err != nil {
		return nil, err
	}
	var ah *gptHeader
	var aents []byte
	if ph != nil {
		if ah, aents, err = s.gptAt(ph.altLBA, last); err != nil {
			return nil, err
		}
	}
	if ah == nil && force {
		if ah, aents, err = s.gptAt(last, last); err != nil {
			return nil, err
		}
	}
	h, ents, backup := ph, pents, false
	if h == nil {
		if ah == nil {
			return nil, nil
		}
		h, ents, backup = ah, aents, true
	}
	t := &Table{Kind: TableGPT, ID: guidString(h.diskGUID[:]), FirstLBA: h.firstLBA, LastLBA: h.lastLBA, Backup: backup}
	unit := s.ss
	for i := 0; i < int(h.numEntries) && i < maxPartitions-1; i++ {
		e := ents[i*gptEntrySize : (i+1)*gptEntrySize]
		if allZero(e[:16]) {
			continue // unused entry
		}
		first := binary.LittleEndian.Uint64(e[32:])
		end := binary.LittleEndian.Uint64(e[40:])
		if first > last || end > last {
			continue // is_pte_valid
		}
		size := int64(end-first+1) * unit // as the kernel computes it, even if end < first
		t.Parts = append(t.Parts, Partition{
			Number:   i + 1,
			Start:    int64(first) * unit,
			Size:     size,
			TypeGUID: guidString(e[0:16]),
			UUID:     guidString(e[16:32]),
			Attrs:    binary.LittleEndian.Uint64(e[48:]),
			Name:     gptName(e[56:128]),
		})
	}
	return t, nil
}

// protectiveMBR is is_pmbr_valid: the MBR magic and a slot of type 0xee
// starting at LBA 1 (a hybrid MBR, with other slots in use, counts).
func protectiveMBR(b []byte) bool {
	if !hasMBRMagic(b) {
		return false
	}
	for _, e := range mbrEntries(b) {
		if e.typ == typeGPT && e.start == 1 {
			return true
		}
	}
	return false
}

// gptAt reads and checks the GPT header at lba and its entries
// (is_gpt_valid), or returns nil.
func (s *scan) gptAt(lba, last uint64) (*gptHeader, []byte, error) {
	b, err := s.sector(lba)
	if err != nil || b == nil {
		return nil, nil, err
	}
	if string(b[:8]) != gptSig {
		return nil, nil, nil
	}
	hsize := binary.LittleEndian.Uint32(b[12:])
	if hsize < gptHeaderMin || int64(hsize) > s.ss {
		return nil, nil, nil
	}
	crc := binary.LittleEndian.Uint32(b[16:])
	hb := append([]byte(nil), b[:hsize]...)
	binary.LittleEndian.PutUint32(hb[16:], 0)
	if crc32.ChecksumIEEE(hb) != crc {
		return nil, nil, nil
	}
	h := &gptHeader{
		myLBA:      binary.LittleEndian.Uint64(b[24:]),
		altLBA:     binary.LittleEndian.Uint64(b[32:]),
		firstLBA:   binary.LittleEndian.Uint64(b[40:]),
		lastLBA:    binary.LittleEndian.Uint64(b[48:]),
		entriesLBA: binary.LittleEndian.Uint64(b[72:]),
		numEntries: binary.LittleEndian.Uint32(b[80:]),
		entSize:    binary.LittleEndian.Uint32(b[84:]),
		entriesCRC: binary.LittleEndian.Uint32(b[88:]),
	}
	copy(h.diskGUID[:], b[56:72])
	if h.myLBA != lba || h.firstLBA > last || h.lastLBA > last || h.lastLBA < h.firstLBA {
		return nil, nil, nil
	}
	if h.entSize != gptEntrySize {
		return nil, nil, nil
	}
	n := uint64(h.numEntries) * gptEntrySize
	if n == 0 || n > gptMaxEntryBytes {
		return nil, nil, nil
	}
	if h.entriesLBA > last || (n+uint64(s.ss)-1)/uint64(s.ss) > uint64(s.sectors)-h.entriesLBA {
		return nil, nil, nil // alloc_read_gpt_entries' read fails
	}
	ents := make([]byte, n)
	if _, err := s.r.ReadAt(ents, int64(h.entriesLBA)*s.ss); err != nil {
		return nil, nil, err
	}
	if crc32.ChecksumIEEE(ents) != h.entriesCRC {
		return nil, nil, nil
	}
	return h, ents, nil
}

// guidString formats a GUID stored in GPT's mixed-endian layout.
func guidString(b []byte) string {
	return fmt.Sprintf("%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X",
		binary.LittleEndian.Uint32(b[0:]), binary.LittleEndian.Uint16(b[4:]), binary.LittleEndian.Uint16(b[6:]),
		b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
}

// gptName decodes a partition name: UTF-16LE up to the first NUL.
func gptName(b []byte) string {
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		c := binary.LittleEndian.Uint16(b[i:])
		if c == 0 {
			break
		}
		u = append(u, c)
	}
	return string(utf16.Decode(u))
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// TypeName returns the partition type's name as sfdisk prints it.
func (p *Partition) TypeName() string {
	if p.TypeGUID != "" {
		if n, ok := gptTypes[strings.ToUpper(p.TypeGUID)]; ok {
			return n
		}
		return p.TypeGUID
	}
	if n, ok := dosTypes[p.Type]; ok {
		return n
	}
	return "unknown"
}

var dosTypes = map[byte]string{
	0x01: "FAT12", 0x04: "FAT16 <32M", 0x05: "Extended", 0x06: "FAT16", 0x07: "HPFS/NTFS/exFAT",
	0x0b: "W95 FAT32", 0x0c: "W95 FAT32 (LBA)", 0x0e: "W95 FAT16 (LBA)", 0x0f: "W95 Ext'd (LBA)",
	0x82: "Linux swap / Solaris", 0x83: "Linux", 0x85: "Linux extended", 0x8e: "Linux LVM",
	0xa5: "FreeBSD", 0xee: "GPT", 0xef: "EFI (FAT-12/16/32)", 0xfd: "Linux raid autodetect",
}

var gptTypes = map[string]string{
	"C12A7328-F81F-11D2-BA4B-00A0C93EC93B": "EFI System",
	"21686148-6449-6E6F-744E-656564454649": "BIOS boot",
	"0FC63DAF-8483-4772-8E79-3D69D8477DE4": "Linux filesystem",
	"0657FD6D-A4AB-43C4-84E5-0933C84B4F4F": "Linux swap",
	"E6D6D379-F507-44C2-A23C-238F2A3DF928": "Linux LVM",
	"A19D880F-05FC-4D3B-A006-743F0F84911E": "Linux RAID",
	"4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709": "Linux root (x86-64)",
	"933AC7E1-2EB4-4F13-B844-0E14E2AEF915": "Linux home",
	"EBD0A0A2-B9E5-4433-87C0-68B6B72699C7": "Microsoft basic data",
	"E3C9E316-0B5C-4DB8-817D-F92DF00215AE": "Microsoft reserved",
}

// DeviceReaderAt returns an io.ReaderAt over d that reads any byte range
// within ReadEnd through whole sectors. A read past ReadEnd gives io.EOF
// for the part past it.
func DeviceReaderAt(d Device) io.ReaderAt { return devReader{d} }

type devReader struct{ d Device }

func (r devReader) ReadAt(p []byte, off int64) (int, error) {
	end := ReadEnd(r.d)
	if off < 0 {
		return 0, errEINVAL
	}
	if off >= end {
		return 0, io.EOF
	}
	want := len(p)
	if int64(want) > end-off {
		p = p[:end-off]
	}
	ss := int64(r.d.SectorSize())
	if off%ss == 0 && int64(len(p))%ss == 0 {
		n, err := r.d.ReadIter(iov.Buf(p), off)
		if err != nil {
			return n, err
		}
	} else {
		first := off &^ (ss - 1)
		last := (off + int64(len(p)) + ss - 1) &^ (ss - 1)
		buf := make([]byte, last-first)
		if _, err := r.d.ReadIter(iov.Buf(buf), first); err != nil {
			return 0, err
		}
		copy(p, buf[off-first:])
	}
	if len(p) < want {
		return len(p), io.EOF
	}
	return len(p), nil
}
