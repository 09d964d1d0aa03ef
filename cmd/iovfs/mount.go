package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/diskimage"
	"github.com/iovfs/iovfs/fuse"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

const mountUsage = `usage: iovfs mount -t TYPE [-o OPTIONS] [--allow-other] [--debug] SOURCE MOUNTPOINT

Builds an iovfs namespace holding one file system and exports it at
MOUNTPOINT on the host through FUSE, in the foreground, until SIGINT or
SIGTERM (or umount MOUNTPOINT). Needs /dev/fuse, and root or fusermount3.

TYPE and SOURCE:
  tmpfs           SOURCE is ignored (none)
  ext4, ext3, ext2, vfat
                  SOURCE is an image file, carried by a loop device inside
                  the process (no privilege of its own); read-write unless
                  -o ro (ext4 with iovfs's journaled writer, which refuses,
                  naming it, an on-disk feature it cannot write), under the
                  image's lock: a second writer is refused
  hostfs          SOURCE is a host directory
  devfs           SOURCE is ignored; the devices are shown as files
  overlay         SOURCE is ignored (none); -o lowerdir=A[:B...],upperdir=U,
                  workdir=W name host directories (a lowerdir may be an
                  image file, mounted read-only): Linux's overlayfs in the
                  kernel's format, whose upper directory the kernel's
                  overlay mounts too; two or more lowerdirs alone make a
                  read-only overlay

options:
  -t TYPE         the file system type (required)
  -o OPTIONS      comma-separated: ro mounts read-only; dev and suid let the
                  host use device nodes and set-ID bits on the export (root
                  only; nodev and nosuid, the defaults, do not); noatime,
                  nodiratime, relatime (the default), strictatime and noexec
                  are the host mount's flags, and atime on the export follows
                  them and their remounts (mount -o remount); allow_idmap
                  lets the host make idmapped mounts of the export
                  (mount_setattr(2) with MOUNT_ATTR_IDMAP), the kernel
                  then making every permission decision; the others
                  go to the file system: tmpfs size=, nr_inodes=, mode=, uid=, gid=;
                  ext4 dax, nodax, commit=N, noload, data=ordered|journal,
                  errors=continue|remount-ro|panic, bcache=SIZE; hostfs uid=,
                  gid=, xdev; overlay lowerdir=, upperdir=, workdir=,
                  userxattr, and the off values of redirect_dir, index,
                  metacopy, nfs_export, xino
  --allow-other   let other users reach the export (allow_other)
  --debug         log every FUSE request on stderr
  -h, --help      show this help

examples:
  iovfs mount -t tmpfs -o size=1g none /mnt/x
  iovfs mount -t ext4 -o ro,dax disk.img /mnt/x
  iovfs mount -t ext4 disk.img /mnt/x        # read-write
  iovfs mount -t hostfs /srv/data /mnt/x
  iovfs mount -t devfs none /mnt/x
  iovfs mount -t overlay -o lowerdir=base,upperdir=up,workdir=work none /mnt/x
`

// runMount is "iovfs mount".
func runMount(args []string, stdout, stderr io.Writer) int {
	c := &cli{name: "mount", stdout: stdout, stderr: stderr}
	if wantsHelp(args, false) {
		fmt.Fprint(stdout, mountUsage)
		return 0
	}
	a, err := parseMountArgs(args)
	if err != nil {
		return c.usageError("%v", err)
	}
	typ, optStr, allowOther, debug := &a.typ, &a.opts, &a.allowOther, &a.debug
	source, mnt := a.source, a.mountpoint
	fail := c.fail
	sink.name("/dev/loop0", source)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fail("/dev/fuse is missing: the kernel has no FUSE here (%s)", errText(err))
	}
	abs, err := filepath.Abs(mnt)
	if err != nil {
		return fail("%v", err)
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return fail("mountpoint %s: %s", mnt, errText(err))
	case !fi.IsDir():
		return fail("mountpoint %s is not a directory", mnt)
	case isMountPoint(abs):
		return fail("mountpoint %s is busy: something is already mounted there", mnt)
	}

	var flags uintptr
	var data []string
	var dev, suid, idmap bool
	var hostFlags uintptr
	for _, o := range strings.Split(*optStr, ",") {
		if f, set, ok := hostMountFlag(o); ok {
			if set {
				hostFlags |= f
			} else {
				hostFlags &^= f
			}
			continue
		}
		switch o {
		case "":
		case "ro":
			flags |= unix.MS_RDONLY
		case "rw":
			flags &^= unix.MS_RDONLY
		case "dev", "nodev":
			dev = o == "dev"
		case "suid", "nosuid":
			suid = o == "suid"
		case "allow_idmap":
			idmap = true
		default:
			data = append(data, o)
		}
	}
	p, root, devFiles, err := buildExport(*typ, source, flags, strings.Join(data, ","))
	if err != nil {
		return fail("%v", err)
	}
	// The host kernel applies its fs.protected_* rules before a request
	// reaches the export: the export decides by the same settings, read
	// when a rule needs them (a sysctl write takes effect at once).
	if hp, err := vfs.OpenHostLinkProtection(); err == nil {
		defer hp.Close()
		p.Namespace().SetLinkProtectionFunc(hp.Read)
	}
	srv, err := fuse.Mount(p, root, abs, fuse.Options{
		AllowOther:     *allowOther,
		ReadOnly:       flags&unix.MS_RDONLY != 0,
		Debug:          *debug,
		Name:           source,
		Fsname:         "iovfs." + *typ,
		DevicesAsFiles: devFiles,
		Dev:            dev,
		AllowIdmap:     idmap,
		Suid:           suid,
		MountFlags:     hostFlags,
		// Nothing but the kernel mount uses this namespace, so the
		// kernel keeps flock locks: /proc/locks and lslocks show them.
		KernelFlock: true,
	})
	if err != nil {
		if errors.Is(err, syscall.EBUSY) {
			return fail("mountpoint %s is busy: %s", mnt, errText(err))
		}
		return fail("%v", err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	// The server learns of an unmount from outside when every request
	// it is serving has returned; the mount table shows it at once. A
	// mount of the same image that comes meanwhile waits for this process
	// instead of refusing the image as in use.
	go func() {
		select {
		case <-srv.Unmounted():
			diskimage.MarkClosing()
		case <-done:
		}
	}()
	fmt.Fprintf(stdout, "iovfs: %s %s mounted on %s (pid %d); SIGINT or SIGTERM unmounts\n", *typ, source, abs, os.Getpid())
	var how string
	select {
	case s := <-sig:
		how = fmt.Sprintf("unmounted on %v", s)
	case <-done:
		how = "was unmounted"
	}
	// umount(8) has returned: a mount of the same image may come at
	// once, and waits for this process to let go of the image instead of
	// refusing it as in use.
	diskimage.MarkClosing()
	// The export closes everything it holds (open files whose RELEASE
	// never came, lock owners, the nodes' descriptors) before it returns,
	// so the file system below is free to go.
	uerr := srv.Unmount()
	status := 0
	if uerr != nil {
		fmt.Fprintf(stderr, "iovfs mount: %v\n", uerr)
		status = 1
	}
	// Unmount the exported file system inside the process too, so that a
	// read-write ext4 image gets its last transaction committed and its
	// journal marked clean before the process exits (ext4 Shutdown).
	if root != "/dev" {
		if err := unmountInside(p, root); err != nil {
			// Something still holds a file (a request blocked in iovfs
			// longer than the export waits): detach, so the file system
			// shuts down when it lets go, and say so.
			p.Unmount(root, unix.MNT_DETACH)
			return fail("unmounting %s inside the process: %v (changes after the last sync may be lost)", source, err)
		}
	}
	// The images an overlay's lower layers were (-o lowerdir=IMAGE).
	if err := closeImages(); err != nil {
		return fail("%v", err)
	}
	if status == 0 {
		fmt.Fprintf(stdout, "iovfs: %s %s\n", abs, how)
	}
	return status
}

// unmountInside unmounts root of p's namespace, waiting a moment for
// requests that are still returning (each drops its file when it does).
func unmountInside(p *vfs.Proc, root string) error {
	var err error
	for range 50 {
		if err = p.Unmount(root, 0); !errors.Is(err, syscall.EBUSY) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// mountArgs are the parsed arguments of "iovfs mount".
type mountArgs struct {
	typ, opts          string
	allowOther, debug  bool
	source, mountpoint string
}

// parseMountArgs parses the arguments of "iovfs mount", or says what is
// wrong with them.
func parseMountArgs(args []string) (mountArgs, error) {
	var a mountArgs
	fl := newFlagSet("mount")
	fl.StringVar(&a.typ, "t", "", "")
	fl.StringVar(&a.opts, "o", "", "")
	fl.BoolVar(&a.allowOther, "allow-other", false, "")
	fl.BoolVar(&a.debug, "debug", false, "")
	if err := fl.Parse(args); err != nil {
		return a, errors.New(flagError(err, args))
	}
	switch {
	case a.typ == "":
		return a, errors.New("missing -t TYPE (tmpfs, ext4, ext3, ext2, vfat, hostfs, devfs or overlay)")
	case !slices.Contains([]string{"tmpfs", "ext4", "ext3", "ext2", "vfat", "hostfs", "devfs", "overlay"}, a.typ):
		return a, fmt.Errorf("unknown file system type %q: want tmpfs, ext4, ext3, ext2, vfat, hostfs, devfs or overlay", a.typ)
	case fl.NArg() < 2:
		return a, errors.New("missing operand: want SOURCE MOUNTPOINT")
	case fl.NArg() > 2:
		return a, fmt.Errorf("extra operand %q", fl.Arg(2))
	}
	a.source, a.mountpoint = fl.Arg(0), fl.Arg(1)
	return a, nil
}

// hostMountFlag is mount(8)'s reading of an atime or exec option: the
// mount(2) flag it sets (set) or clears.
func hostMountFlag(o string) (flag uintptr, set, ok bool) {
	switch o {
	case "noatime", "atime":
		return unix.MS_NOATIME, o == "noatime", true
	case "nodiratime", "diratime":
		return unix.MS_NODIRATIME, o == "nodiratime", true
	case "relatime", "norelatime":
		return unix.MS_RELATIME, o == "relatime", true
	case "strictatime", "nostrictatime":
		return unix.MS_STRICTATIME, o == "strictatime", true
	case "noexec", "exec":
		return unix.MS_NOEXEC, o == "noexec", true
	}
	return 0, false, false
}

// buildExport makes a namespace holding the file system asked for and
// returns the process, the directory to export, and whether devices are
// to be shown as files.
func buildExport(typ, source string, flags uintptr, data string) (*vfs.Proc, string, bool, error) {
	p, err := iovfs.New()
	if err != nil {
		return nil, "", false, err
	}
	switch typ {
	case "tmpfs":
		if err := p.Mount(source, "/mnt", "tmpfs", flags, data); err != nil {
			return nil, "", false, &shownError{mountMsg(err), err}
		}
		return p, "/mnt", false, nil
	case "hostfs":
		if err := p.Mount(source, "/mnt", "hostfs", flags, data); err != nil {
			return nil, "", false, &shownError{source + ": " + mountMsg(err), err}
		}
		return p, "/mnt", false, nil
	case "overlay":
		fs, err := hostOverlay(data)
		if err != nil {
			return nil, "", false, err
		}
		if err := p.Namespace().MountFS("/mnt", fs, flags&unix.MS_RDONLY != 0); err != nil {
			fs.Shutdown()
			return nil, "", false, err
		}
		return p, "/mnt", false, nil
	case "devfs":
		if flags&unix.MS_RDONLY != 0 {
			return nil, "", false, fmt.Errorf("devfs: -o ro is not supported: the devices are what they are")
		}
		return p, "/dev", true, nil
	case "ext2", "ext3", "ext4", "vfat":
		// Without -o ro the image is opened for writing and mounted
		// read-write (the writer refuses, naming it, a feature it cannot
		// write; -o ro then mounts it).
		ro := flags&unix.MS_RDONLY != 0
		mode := os.O_RDWR
		if ro {
			mode = os.O_RDONLY
		}
		if err := checkImageFile(source); err != nil {
			return nil, "", false, err
		}
		f, err := os.OpenFile(source, mode, 0)
		if err != nil {
			return nil, "", false, fmt.Errorf("%s: %s", source, errText(err))
		}
		defer f.Close()
		// One writer per image: the lock lives with the open file
		// description, which the loop device keeps through its import.
		if err := diskimage.Lock(f, !ro, source); err != nil {
			return nil, "", false, err
		}
		fd, err := p.ImportFile(f)
		if err != nil {
			return nil, "", false, fmt.Errorf("%s: %s", source, errText(err))
		}
		defer p.Close(fd)
		lmode := unix.O_RDWR
		if ro {
			lmode = unix.O_RDONLY
		}
		lfd, err := p.Open("/dev/loop0", lmode, 0)
		if err != nil {
			return nil, "", false, fmt.Errorf("%s: no loop device to carry it: %s", source, errText(err))
		}
		defer p.Close(lfd) // the mount holds the device once it has it
		cfg := unix.LoopConfig{Fd: uint32(fd)}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		if ro {
			cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
		}
		if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &cfg); err != nil {
			return nil, "", false, fmt.Errorf("%s: cannot use it as a disk: %s", source, errText(err))
		}
		if err := p.Mount("/dev/loop0", "/mnt", typ, flags, data); err != nil {
			return nil, "", false, &shownError{fmt.Sprintf("%s: cannot mount it as %s: %s", source, typ, loopDevName.ReplaceAllString(mountMsg(err), source)), err}
		}
		return p, "/mnt", false, nil
	}
	return nil, "", false, fmt.Errorf("unknown file system type %q (tmpfs, ext2, ext3, ext4, vfat, hostfs, devfs, overlay)", typ)
}

// isMountPoint reports whether something is mounted at dir, from
// /proc/self/mountinfo (field 5 is the mount point, octal-escaped).
func isMountPoint(dir string) bool {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 4 && unescapeMountinfo(fs[4]) == dir {
			return true
		}
	}
	return false
}

func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
