package ext4

// The VFS glue: a read-only ext2/3/4 file system mounted from a block
// device, as Linux's ext4_fill_super does it for an "ro" mount.
//
// Invariants:
//   - The FS holds a vfs.Backing on the source device from Mount until
//     Shutdown, so the device stays open (a loop device stays bound and
//     reports EBUSY to LOOP_CTL_REMOVE) and any DirectAccess view taken
//     at mount stays mapped (block.DirectAccessor's validity rule).
//   - The volume is read-only, so an Inode, a Mapping and a node never go
//     stale: nodes are cached by inode number for the life of the mount,
//     which gives the VFS the stable identity it compares with ==.
//   - mu protects nodes only; no other lock is held while it is.

import (
	"fmt"
	"github.com/iovfs/iovfs/fs/ext4/disk"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/block"
	"github.com/iovfs/iovfs/notice"
	"github.com/iovfs/iovfs/vfs"
)

// Types are the file system type names the driver registers under: Linux's
// ext4 driver serves ext2 and ext3 volumes too.
var Types = []string{"ext4", "ext3", "ext2"}

// Mount is the vfs.MountFunc of the ext4 driver. Warnings (a journal that
// needs recovery, a bad group descriptor checksum) are posted to package
// notice, with the source; use NewMountFunc to send them elsewhere.
//
// With MS_RDONLY the mount is this read-only driver and req.Source is
// opened O_RDONLY; a journal that needs recovery is first replayed into
// the device, as Linux's ro mount does (rwrecover.go: the source is
// opened O_RDWR for the replay only; EROFS if the device is read-only),
// unless noload or norecovery. Without MS_RDONLY, req.Source is opened
// O_RDWR and served by the Writer (rw.go, rwmount.go): features it cannot
// keep correct give a *FeatureError (EINVAL) naming them, and a journal
// that needs recovery is replayed. Either way req.Source must be a block
// device (ENOTBLK otherwise, as Linux's lookup_bdev). Options in
// req.Data, comma-separated:
//
//	dax, dax=always   read-only: copy file data straight from device
//	                  memory; read-write: write file data straight into
//	                  it (rwdax.go). The device must offer direct access
//	                  (EINVAL otherwise)
//	dax=never, nodax  read and write file data through the device (the
//	                  default)
//	bcache=SIZE       a buffer cache of the mount's own for metadata and
//	                  the parsed directory listings, of at most SIZE
//	                  bytes (or with a K, M or G suffix); by default the
//	                  mount shares block.ProcessCache, one budget for the
//	                  process sized from its memory and reclaimed under
//	                  pressure; bcache=0 reads metadata and directories
//	                  from the device every time. A dax mount reads
//	                  metadata from device memory: the budget is its
//	                  listings'.
//	commit=N          read-write: commit the running transaction N seconds
//	                  after the last commit, with or without further
//	                  operations (0: the default, 5); at most INT_MAX/HZ
//	data=ordered      read-write: file data reaches the device before the
//	                  metadata that points at it commits (the default)
//	data=journal      read-write: file data is logged in the transaction
//	data=writeback    accepted; runs as data=ordered
//	errors=continue|remount-ro|panic
//	                  read-write: what damage found by an operation does
//	                  (Writer.ReportError); the default is the superblock's
//	                  s_errors; panic runs as remount-ro
//	noload, norecovery
//	                  do not replay the journal; read-write: do not use it
//	                  either (a volume that needs recovery is refused)
//	acl, user_xattr   accepted: POSIX ACLs and user xattrs are always on,
//	                  as on Linux's ext4 since 3.5 (whatever the
//	                  superblock's default mount options say); noacl
//	                  and nouser_xattr are unknown options, as since 6.0
//	journal_checksum, nojournal_checksum, barrier, barrier=N, nobarrier,
//	delalloc, nodelalloc, ro, rw, noatime, relatime, strictatime,
//	nodiratime
//	                  accepted and ignored (the journal keeps the
//	                  checksum kind mke2fs gave it; the atime words are
//	                  mount(8) flags Linux refuses here, accepted because
//	                  iovfs's mount commands pass them as data)
//
// Any other option, a bad value, data=journal with dax or delalloc, and
// data=, commit= (other than 0 or 5) or journal_checksum on a mount
// without a journal (no has_journal, or noload) give EINVAL, as ext4's
// parse_options and __ext4_fill_super do. For benchmarks only,
// "x-iovfs-read=iomap|iter-wrap|iter-1seg" selects a read-only handle
// shaped like one of the read paths of the ext4-dax experiment (see
// ReadPath); production mounts leave it unset.
func Mount(req vfs.MountRequest) (vfs.FileSystem, error) {
	return NewMountFunc(nil)(req)
}

// NewMountFunc returns a vfs.MountFunc like Mount whose warnings go to
// logf; nil means package notice.
func NewMountFunc(logf func(format string, args ...any)) vfs.MountFunc {
	return func(req vfs.MountRequest) (vfs.FileSystem, error) {
		lf := logf
		if lf == nil {
			lf = func(format string, args ...any) {
				msg := strings.TrimPrefix(fmt.Sprintf(format, args...), "ext4: ")
				notice.Post(notice.Notice{Driver: "ext4", Source: req.Source, Msg: msg})
			}
		}
		return mount(req, lf)
	}
}

// ReadPath names the shape of a regular file's read methods (see Mount's
// x-iovfs-read option). The default, ReadScalar, is what production uses.
type ReadPath int

const (
	// ReadScalar: the handle has Read (the scalar read) and ReadIter.
	ReadScalar ReadPath = iota
	// ReadIterWrap: only ReadIter, which calls the scalar read once per
	// segment ("read_iter wraps our read" in the seed).
	ReadIterWrap
	// ReadIter1Seg: only ReadIter, which tests for one segment and calls
	// the scalar read, else takes the vectored path (Mikulas's trick).
	ReadIter1Seg
	// ReadIomap: only ReadIter, through a begin/copy/end mapping callback
	// pair per call with no cached mapping, modelled on dax_iomap_rw.
	ReadIomap
)

type mountOpts struct {
	dax  bool
	path ReadPath
	// bcache is the bcache= budget in bytes; -1 when not given.
	bcache int64
	// commit is the commit= interval of a read-write mount; 0: 5 s.
	commit time.Duration
	// commitSet: commit= was given (an error without a journal).
	commitSet bool
	// noload: noload or norecovery, the journal is neither replayed nor
	// used.
	noload bool
	// data is the data= mode; dataSet: it was given.
	data    disk.DataMode
	dataSet bool
	// errors is the errors= behaviour, ErrorsDefault when not given (the
	// superblock's s_errors then decides).
	errors disk.ErrorBehavior
	// csumSet: journal_checksum was given (an error without a
	// journal); noJCsum: nojournal_checksum was given after any
	// journal_checksum.
	csumSet, noJCsum bool
	// delalloc: delalloc was given (conflicts with data=journal).
	delalloc bool
}

func parseOpts(data string) (mountOpts, error) {
	o := mountOpts{bcache: -1}
	for _, opt := range strings.Split(data, ",") {
		name, val, hasVal := strings.Cut(opt, "=")
		switch name {
		case "commit":
			// fsparam_u32: 0 is the default, more than INT_MAX/HZ
			// seconds is refused (HZ 250, Debian's kernels').
			n, err := strconv.ParseUint(val, 10, 32)
			if !hasVal || err != nil || n > (1<<31-1)/250 {
				return o, fmt.Errorf("ext4: bad commit= interval %q: %w", val, syscall.EINVAL)
			}
			o.commit, o.commitSet = time.Duration(n)*time.Second, true
			continue
		case "bcache":
			n, ok := parseCacheSize(val)
			if !ok {
				return o, fmt.Errorf("ext4: bad bcache= size %q: %w", val, syscall.EINVAL)
			}
			o.bcache = n
			continue
		case "data":
			m, ok := map[string]disk.DataMode{"ordered": disk.DataOrdered, "journal": disk.DataJournal, "writeback": disk.DataWriteback}[val]
			if !ok {
				return o, fmt.Errorf("ext4: bad data= mode %q: %w", val, syscall.EINVAL)
			}
			o.data, o.dataSet = m, true
			continue
		case "errors":
			e, ok := map[string]disk.ErrorBehavior{"continue": disk.ErrorsContinue, "remount-ro": disk.ErrorsRemountRO, "panic": disk.ErrorsPanic}[val]
			if !ok {
				return o, fmt.Errorf("ext4: bad errors= behaviour %q: %w", val, syscall.EINVAL)
			}
			o.errors = e
			continue
		case "barrier":
			// fsparam_u32 or a flag: barrier, barrier=N.
			if _, err := strconv.ParseUint(val, 10, 32); hasVal && err != nil {
				return o, fmt.Errorf("ext4: bad barrier= value %q: %w", val, syscall.EINVAL)
			}
			continue
		}
		switch opt {
		case "", "ro", "rw", "user_xattr", "acl", "noatime", "relatime", "strictatime", "nodiratime", "nobarrier", "nodelalloc":
		case "noload", "norecovery":
			o.noload = true
		case "journal_checksum":
			o.csumSet, o.noJCsum = true, false
		case "nojournal_checksum":
			o.noJCsum = true
		case "delalloc":
			o.delalloc = true
		case "dax", "dax=always":
			o.dax = true
		case "dax=never", "nodax":
			o.dax = false
		case "x-iovfs-read=iomap":
			o.path = ReadIomap
		case "x-iovfs-read=iter-wrap":
			o.path = ReadIterWrap
		case "x-iovfs-read=iter-1seg":
			o.path = ReadIter1Seg
		case "x-iovfs-read=read":
			o.path = ReadScalar
		default:
			return o, fmt.Errorf("ext4: unknown mount option %q: %w", opt, syscall.EINVAL)
		}
	}
	// ext4_check_opt_consistency and __ext4_fill_super's checks that need
	// no volume.
	if o.data == disk.DataJournal && o.delalloc {
		return o, fmt.Errorf("ext4: can't mount with both data=journal and delalloc: %w", syscall.EINVAL)
	}
	if o.data == disk.DataJournal && o.dax {
		return o, fmt.Errorf("ext4: can't mount with both data=journal and dax: %w", syscall.EINVAL)
	}
	return o, nil
}

// checkJournalOpts refuses the journal options of a mount that runs
// without a journal (no has_journal, or noload on a read-write mount), as
// __ext4_fill_super's nojournal branch: data=, commit= and
// journal_checksum give EINVAL; data=ordered given explicitly too.
func (o mountOpts) checkJournalOpts(journal bool) error {
	if journal {
		return nil
	}
	switch {
	case o.dataSet:
		return fmt.Errorf("ext4: can't mount with data=, fs mounted w/o journal: %w", syscall.EINVAL)
	case o.commitSet && o.commit != 5*time.Second && o.commit != 0:
		return fmt.Errorf("ext4: can't mount with commit=, fs mounted w/o journal: %w", syscall.EINVAL)
	case o.csumSet:
		return fmt.Errorf("ext4: can't mount with journal_checksum, fs mounted w/o journal: %w", syscall.EINVAL)
	}
	return nil
}

func mount(req vfs.MountRequest, logf func(string, ...any)) (vfs.FileSystem, error) {
	opts, err := parseOpts(req.Data)
	if err != nil {
		return nil, err
	}
	if req.Proc == nil {
		return nil, fmt.Errorf("ext4: mount of %s without a process to open it: %w", req.Source, syscall.EINVAL)
	}
	ro := req.Flags&unix.MS_RDONLY != 0
	mode := unix.O_RDONLY
	if !ro {
		if opts.path != ReadScalar {
			return nil, fmt.Errorf("ext4: x-iovfs-read needs a read-only mount: %w", syscall.EINVAL)
		}
		mode = unix.O_RDWR
	}
	fd, err := req.Proc.Open(req.Source, mode, 0)
	if err != nil {
		return nil, err
	}
	b, err := req.Proc.Backing(fd)
	req.Proc.Close(fd) // the Backing keeps the open file
	if err != nil {
		return nil, err
	}
	var fs *FS
	if ro {
		fs, err = mountRO(req, b, opts, logf)
	} else {
		fs, err = mountRW(req, b, opts, logf)
	}
	if err != nil {
		b.Release()
		return nil, err
	}
	return fs, nil
}

// mountRO serves the volume on b read-only, after replaying its journal
// (unless noload) and cleaning its orphans, as Linux's ro mount does
// (recovery.go).
func mountRO(req vfs.MountRequest, b *vfs.Backing, opts mountOpts, logf func(string, ...any)) (*FS, error) {
	if !opts.noload {
		if err := recoverReadOnly(req, b, logf); err != nil {
			return nil, err
		}
	}
	if err := orphansReadOnly(req, b, opts.noload, logf); err != nil {
		return nil, err
	}
	fs, err := newFS(req.Source, b, opts)
	if err != nil {
		return nil, err
	}
	var vdev disk.Device = backingDevice{b: b, size: block.ReadEnd(fs.dev)}
	vopt := disk.Options{Logf: logf}
	switch {
	case fs.mem != nil:
		vdev = memDevice(fs.mem) // metadata straight from device memory
	case opts.bcache != 0:
		vopt.Cache, vopt.CacheDevice = fs.cache(), fs.dev
	}
	if fs.vol, err = disk.Open(vdev, vopt); err != nil {
		return nil, err
	}
	if err = opts.checkJournalOpts(fs.vol.HasJournal() && !opts.noload); err == nil {
		err = fs.start()
	}
	if err != nil {
		fs.closeVolume()
		return nil, err
	}
	return fs, nil
}

// mountRW serves the volume on b read-write: a Writer changes it (features
// it cannot keep correct give a *FeatureError, EINVAL; a journal that
// needs recovery is replayed), and the Writer's Reader reads it without
// its lock, through the buffer cache; file data is read from device
// memory when the device can be mapped. dax writes file data into device
// memory too (disk/rwdax.go).
func mountRW(req vfs.MountRequest, b *vfs.Backing, opts mountOpts, logf func(string, ...any)) (*FS, error) {
	fs, err := newFS(req.Source, b, opts)
	if err != nil {
		return nil, err
	}
	w, err := disk.OpenWriter(backingWDevice{backingDevice{b: b, size: block.ReadEnd(fs.dev)}}, disk.Options{Logf: logf, NoLoad: opts.noload, NoJournalChecksum: opts.noJCsum})
	if err != nil {
		return nil, err
	}
	if err := opts.checkJournalOpts(w.Journalled()); err != nil {
		w.Close()
		return nil, err
	}
	w.Batch = true
	startClock() // atime.go
	if opts.commit > 0 {
		w.CommitInterval = opts.commit
	}
	w.Data, w.Errors = opts.data, opts.errors
	w.MountPoint = req.Target
	if fs.dax != nil {
		w.UseDAX(fs.dax, fs.mem)
	} else if da, ok := fs.dev.(block.DirectAccessor); ok {
		// Not dax: data is written through the device, and read from its
		// memory when all of it can be mapped.
		fs.mem = wholeView(da, fs.dev)
	}
	fs.viaVol = opts.data == disk.DataJournal && w.Journalled()
	vopt := disk.Options{Logf: logf}
	if opts.bcache != 0 {
		vopt.Cache, vopt.CacheDevice = fs.cache(), fs.dev
	}
	if fs.vol, err = w.Reader(vopt); err != nil {
		w.Close()
		return nil, err
	}
	fs.w = w
	w.OnRelease(fs.released)
	w.StartCommitter()
	if err := fs.start(); err != nil {
		w.Close()
		fs.closeVolume()
		return nil, err
	}
	return fs, nil
}

// newFS is the FS of a mount of b, before its volume: the block device
// (ENOTBLK otherwise) and, for dax, its direct access (EINVAL without).
func newFS(src string, b *vfs.Backing, opts mountOpts) (*FS, error) {
	dev, ok := block.Of(b.Handle())
	if !ok {
		return nil, fmt.Errorf("ext4: %s is not a block device: %w", src, syscall.ENOTBLK)
	}
	fs := &FS{b: b, dev: dev, opts: opts, nodes: map[uint32]vfs.Node{}}
	if opts.dax {
		var err error
		if fs.dax, fs.mem, err = probeDAX(src, dev); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// cache is the buffer cache the mount reads metadata through and charges
// its listings to: one of its own of the bcache= budget, else the
// process's, shared with every other mount (a page cache's budget).
func (fs *FS) cache() *block.Cache {
	if fs.opts.bcache > 0 {
		return block.NewCache(fs.opts.bcache)
	}
	return block.ProcessCache()
}

// start finishes a mount whose volume is open: the block size, the
// listings' budget, the root's node.
func (fs *FS) start() error {
	fs.bs = uint64(fs.vol.BlockSize())
	for fs.bs>>fs.bsBits > 1 {
		fs.bsBits++
	}
	switch {
	case fs.vol.MetaView() != nil:
		fs.lview = fs.vol.MetaView() // listings share the blocks' budget
	case fs.mem != nil && fs.w == nil && fs.opts.bcache != 0:
		fs.lview = fs.cache().View(fs.dev, int(fs.bs))
	}
	_, err := fs.nodeIno(fs.vol.Root())
	return err
}

// probeDAX returns dev's direct accessor for a dax mount and, if the
// device can map all of itself, the view of the whole device. Linux
// refuses dax on a device without dax_direct_access ("DAX unsupported by
// block device"): EINVAL. It probes once, as block.DirectAccessor asks.
func probeDAX(src string, dev block.Device) (block.DirectAccessor, []byte, error) {
	da, ok := dev.(block.DirectAccessor)
	if ok {
		_, err := da.DirectAccess(0, dev.SectorSize())
		ok = err == nil
	}
	if !ok {
		return nil, nil, fmt.Errorf("ext4: dax: device %s does not offer direct access: %w", src, syscall.EINVAL)
	}
	return da, wholeView(da, dev), nil
}

// wholeView is the view of the whole readable device, if it can map all
// of itself, else nil.
func wholeView(da block.DirectAccessor, dev block.Device) []byte {
	if end := block.ReadEnd(dev); end > 0 && int64(int(end)) == end {
		if m, err := da.DirectAccess(0, int(end)); err == nil && int64(len(m)) == end {
			return m
		}
	}
	return nil
}

// backingDevice is the reader's Device over the held-open source.
type backingDevice struct {
	b    *vfs.Backing
	size int64
}

func (d backingDevice) Size() int64 { return d.size }

// ReadAt has io.ReaderAt's contract: the driver contract allows short
// counts, so it asks again for the rest.
func (d backingDevice) ReadAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := d.b.ReadAt(p[done:], off+int64(done))
		done += n
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, syscall.EIO
		}
	}
	return done, nil
}

// backingWDevice is the Writer's device over the held-open source.
type backingWDevice struct{ backingDevice }

// Sync flushes the device's cache (EINVAL from a device without one is
// ignored by the caller).
func (d backingWDevice) Sync() error { return d.b.Sync() }

func (d backingWDevice) WriteAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := d.b.WriteAt(p[done:], off+int64(done))
		done += n
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, syscall.EIO
		}
	}
	return done, nil
}
