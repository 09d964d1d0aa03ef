// Package fat is the on-disk FAT12/16/32 volume with VFAT long names:
// the boot sector, the allocation tables, directories and file data, as
// Linux's fs/fat reads and writes them. It imports nothing of the VFS;
// package vfat is the glue that mounts a Volume.
//
// # Locking
//
// Volume.mu protects everything below the Volume: the in-memory FAT, the
// free count, every Node's fields and every directory's cached bytes. All
// exported methods take it; none calls another exported method. The
// device is written only under it.
package fat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
)

// Device is the storage a volume lives on, addressed in bytes. ReadAt
// and WriteAt follow io.ReaderAt and io.WriterAt; errors are
// syscall.Errno values where they come from the device.
type Device interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Size is the device's size in bytes.
	Size() int64
	// Flush makes completed writes durable.
	Flush() error
}

// VecWriter is a Device that writes several buffers, one after the
// other from off, in one request. A volume uses it, where the device has
// it, for file data followed by the zeros that end its last sector.
type VecWriter interface {
	WriteVecAt(bufs [][]byte, off int64) (int, error)
}

// ErrNotFAT is returned by Open for a device without a FAT boot sector.
var ErrNotFAT = errors.New("fat: not a FAT file system")

// Attribute bits of a directory entry.
const (
	AttrRO     = 0x01
	AttrHidden = 0x02
	AttrSys    = 0x04
	AttrVolume = 0x08
	AttrDir    = 0x10
	AttrArch   = 0x20
	attrLFN    = 0x0f
)

// Limits of the formats (Linux's MAX_FAT12, MAX_FAT16, MAX_FAT32).
const (
	maxFAT12 = 0xff4
	maxFAT16 = 0xfff4
	maxFAT32 = 0x0ffffff6
)

// geometry is what the boot sector says, checked as fat_fill_super does.
type geometry struct {
	bps         int   // bytes per sector
	spc         int   // sectors per cluster
	clusterSize int   // bytes
	reserved    int64 // sectors before the first FAT
	nfats       int
	fatSectors  int64 // sectors per FAT
	rootEntries int   // FAT12/16: entries of the fixed root directory
	totalSecs   int64
	media       byte
	bits        int   // 12, 16 or 32
	fatStart    int64 // byte offset of the first FAT
	rootStart   int64 // FAT12/16: byte offset of the root directory
	dataStart   int64 // byte offset of cluster 2
	clusters    uint32
	rootCluster uint32 // FAT32
	fsinfo      int64  // FAT32: byte offset of FSInfo, or 0
	stateOff    int    // offset of the state byte (the dirty bit) in the boot sector
	serial      uint32
	label       string
}

func fatValidMedia(m byte) bool { return m >= 0xf8 || m == 0xf0 }

// parseBoot reads the boot sector b (at least 512 bytes) of a device of
// size bytes.
func parseBoot(b []byte, size int64) (*geometry, error) {
	le16 := func(o int) int { return int(binary.LittleEndian.Uint16(b[o:])) }
	le32 := func(o int) uint32 { return binary.LittleEndian.Uint32(b[o:]) }
	g := &geometry{
		bps:         le16(11),
		spc:         int(b[13]),
		reserved:    int64(le16(14)),
		nfats:       int(b[16]),
		rootEntries: le16(17),
		media:       b[21],
		fatSectors:  int64(le16(22)),
	}
	g.totalSecs = int64(le16(19))
	if g.totalSecs == 0 {
		g.totalSecs = int64(le32(32))
	}
	// fat_read_bpb's checks.
	if g.reserved == 0 || g.nfats == 0 || !fatValidMedia(g.media) {
		return nil, ErrNotFAT
	}
	if g.bps < 512 || g.bps > 4096 || g.bps&(g.bps-1) != 0 {
		return nil, fmt.Errorf("fat: bogus logical sector size %d: %w", g.bps, ErrNotFAT)
	}
	if g.spc == 0 || g.spc&(g.spc-1) != 0 {
		return nil, fmt.Errorf("fat: bogus sectors per cluster %d: %w", g.spc, ErrNotFAT)
	}
	g.clusterSize = g.bps * g.spc
	if g.fatSectors == 0 {
		// FAT32: fat32_length, root_cluster, info_sector.
		g.fatSectors = int64(le32(36))
		g.rootCluster = le32(44)
		g.bits = 32
		if fs := int64(le16(48)); fs != 0 && fs < g.reserved {
			g.fsinfo = fs * int64(g.bps)
		}
		g.stateOff = 0x41
		g.serial = le32(0x43)
		g.label = string(b[0x47 : 0x47+11])
	} else {
		g.stateOff = 0x25
		g.serial = le32(0x27)
		g.label = string(b[0x2b : 0x2b+11])
	}
	if g.fatSectors == 0 {
		return nil, fmt.Errorf("fat: bogus number of FAT sectors: %w", ErrNotFAT)
	}
	if g.bits != 32 && g.rootEntries == 0 {
		return nil, fmt.Errorf("fat: bogus number of directory entries: %w", ErrNotFAT)
	}
	// A root directory that does not fill whole sectors is accepted, as
	// Linux accepts it ("directory entries not multiple of sector size").
	bps := int64(g.bps)
	g.fatStart = g.reserved * bps
	rootSecs := (int64(g.rootEntries)*32 + bps - 1) / bps
	g.rootStart = g.fatStart + int64(g.nfats)*g.fatSectors*bps
	dataSec := g.reserved + int64(g.nfats)*g.fatSectors + rootSecs
	g.dataStart = dataSec * bps
	if g.totalSecs <= dataSec {
		return nil, fmt.Errorf("fat: no data area: %w", ErrNotFAT)
	}
	total := (g.totalSecs - dataSec) / int64(g.spc)
	if g.bits != 32 {
		if total > maxFAT12 {
			g.bits = 16
		} else {
			g.bits = 12
		}
	}
	maxClusters := int64(maxFAT32)
	switch g.bits {
	case 12:
		maxClusters = maxFAT12
	case 16:
		maxClusters = maxFAT16
	}
	if total > maxClusters {
		return nil, fmt.Errorf("fat: count of clusters too big (%d): %w", total, ErrNotFAT)
	}
	// A FAT shorter than the volume: the clusters it cannot describe
	// are not used (fat_fill_super's calc_fat_clusters).
	fatEntries := g.fatSectors * bps * 8 / int64(g.bits)
	if fatEntries-2 < total {
		total = fatEntries - 2
	}
	if total <= 0 {
		return nil, fmt.Errorf("fat: no clusters: %w", ErrNotFAT)
	}
	g.clusters = uint32(total)
	if g.bits == 32 && (g.rootCluster < 2 || g.rootCluster >= g.clusters+2) {
		return nil, fmt.Errorf("fat: bogus root cluster %d: %w", g.rootCluster, syscall.EINVAL)
	}
	// The device must hold what the boot sector describes, up to the
	// end of the FATs and the root directory at least.
	if g.dataStart > size {
		return nil, fmt.Errorf("fat: device too small for its boot sector: %w", syscall.EINVAL)
	}
	return g, nil
}

// clusterOff returns the byte offset of cluster c.
func (g *geometry) clusterOff(c uint32) int64 {
	return g.dataStart + int64(c-2)*int64(g.clusterSize)
}

// Info describes a volume, for statfs and for tools.
type Info struct {
	Bits        int // 12, 16 or 32
	ClusterSize int
	Clusters    uint32 // data clusters
	Free        uint32 // free clusters
	Serial      uint32
	Label       string
}
