package main

// iovfs run: a WebAssembly (wasip1) program on an iovfs process, a drop-in
// for "wazero run".

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/dev/mem"
	"github.com/iovfs/iovfs/fs/devfs"
	"github.com/iovfs/iovfs/vfs"
	"github.com/iovfs/iovfs/wasi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
)

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

const runUsage = `usage: iovfs run [flags] PROG.wasm [--] [ARGS...]

Runs a wasip1 program with its files on an iovfs process. Each directory
option below is a preopen, in the order given. stdin, stdout and stderr are
the host's. The exit status is the program's proc_exit code; a trap prints
the error with the wasm stack trace and exits 1.

flags:
`

func runRun(args []string, stdout, stderr io.Writer) int {
	stdout, stderr = lockWriter(stdout), lockWriter(stderr)
	fl := flag.NewFlagSet("run", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var envs, mounts, images, tmpfss multiFlag
	fl.Var(&envs, "env", "K=V: an environment variable for the program (repeatable)")
	envInherit := fl.Bool("env-inherit", false, "pass the host's environment to the program (before --env)")
	fl.Var(&mounts, "mount", "HOSTDIR:GUESTPATH[:ro]: a host directory through hostfs, preopened at GUESTPATH (repeatable)")
	fl.Var(&images, "image", "IMAGE:GUESTPATH[:dax]: an ext4 image on a loop device, read-only, preopened at GUESTPATH (repeatable)")
	fl.Var(&tmpfss, "tmpfs", "GUESTPATH[:size=N]: a new tmpfs preopened at GUESTPATH (repeatable)")
	dev := fl.Bool("dev", false, "preopen /dev with null, zero, full and urandom")
	cacheDir := fl.String("cachedir", "", "compilation cache directory (default: iovfs/wazero in the user's cache directory; \"off\" for none)")
	fl.Usage = func() {
		fmt.Fprint(stderr, runUsage)
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() == 0 {
		fmt.Fprintln(stderr, "iovfs run: missing path to wasm file")
		return 1
	}
	prog, guestArgs := fl.Arg(0), fl.Args()[1:]
	if len(guestArgs) > 0 && guestArgs[0] == "--" {
		guestArgs = guestArgs[1:]
	}
	bin, err := os.ReadFile(prog)
	if err != nil {
		fmt.Fprintf(stderr, "iovfs run: error reading wasm binary: %v\n", err)
		return 1
	}
	var env []string
	if *envInherit {
		env = os.Environ()
	}
	for _, e := range envs {
		if !strings.Contains(e, "=") {
			fmt.Fprintf(stderr, "iovfs run: invalid environment variable: %s\n", e)
			return 1
		}
	}
	env = append(env, envs...)

	p, err := iovfs.New()
	if err != nil {
		fmt.Fprintf(stderr, "iovfs run: %v\n", err)
		return 1
	}
	outF, outDone, err := stdioFile(stdout)
	if err != nil {
		fmt.Fprintf(stderr, "iovfs run: %v\n", err)
		return 1
	}
	defer outDone()
	errF, errDone, err := stdioFile(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "iovfs run: %v\n", err)
		return 1
	}
	defer errDone()
	std := []*os.File{os.Stdin, outF, errF}
	// Runs before errDone and outDone, so their pipes see the end.
	defer closeAll(p)
	for _, f := range std {
		if _, err := p.ImportFile(f); err != nil {
			fmt.Fprintf(stderr, "iovfs run: importing %s: %v\n", f.Name(), err)
			return 1
		}
	}
	var cfg wasi.Config
	b := preopenBuilder{p: p}
	var reqs []request
	for _, m := range mounts {
		reqs = append(reqs, request{"mount", m, b.mount})
	}
	for _, m := range tmpfss {
		reqs = append(reqs, request{"tmpfs", m, b.tmpfs})
	}
	for _, m := range images {
		reqs = append(reqs, request{"image", m, b.image})
	}
	if *dev {
		reqs = append(reqs, request{"dev", "/dev", func(string) error { return b.dev() }})
	}
	// Outer guest paths first, so that an inner one (--tmpfs /tmp under
	// --mount /:/) is mounted inside it.
	sort.SliceStable(reqs, func(i, j int) bool { return depth(guestOf(reqs[i])) < depth(guestOf(reqs[j])) })
	for _, r := range reqs {
		if err := r.do(r.spec); err != nil {
			fmt.Fprintf(stderr, "iovfs run: invalid %s %q: %v\n", r.kind, r.spec, err)
			return 1
		}
	}
	cfg.Preopens = b.preopens

	ctx := context.Background()
	rc := wazero.NewRuntimeConfig()
	if dir := cacheDirFor(*cacheDir); dir != "" {
		if cache, err := wazero.NewCompilationCacheWithDir(dir); err == nil {
			rc = rc.WithCompilationCache(cache)
		} else {
			fmt.Fprintf(stderr, "iovfs run: invalid cachedir: %v\n", err)
			return 1
		}
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	defer r.Close(ctx)
	compiled, err := r.CompileModule(ctx, bin)
	if err != nil {
		fmt.Fprintf(stderr, "iovfs run: error compiling wasm binary: %v\n", err)
		return 1
	}
	if _, err := wasi.Instantiate(ctx, r, p, cfg); err != nil {
		fmt.Fprintf(stderr, "iovfs run: %v\n", err)
		return 1
	}
	mc := wazero.NewModuleConfig().
		WithArgs(append([]string{prog}, guestArgs...)...).
		WithRandSource(rand.Reader).
		WithSysNanosleep().WithSysNanotime().WithSysWalltime()
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		mc = mc.WithEnv(k, v)
	}
	_, err = r.InstantiateModule(ctx, compiled, mc)
	if err != nil {
		var exit *sys.ExitError
		if errors.As(err, &exit) {
			return int(exit.ExitCode())
		}
		fmt.Fprintf(stderr, "iovfs run: error instantiating wasm binary: %v\n", err)
		return 1
	}
	return 0
}

// cacheDirFor returns the compilation cache directory: dir, or
// iovfs/wazero under the user's cache directory; "" for none.
func cacheDirFor(dir string) string {
	switch dir {
	case "off":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(base, "iovfs", "wazero")
	}
	return dir
}

// preopenBuilder mounts each preopen at its own directory of the
// process's namespace, /run/wasi/N, and names it GUESTPATH for the guest.
type preopenBuilder struct {
	p        *vfs.Proc
	preopens []wasi.Preopen
	made     int // directories made under /run/wasi
}

// request is one preopen flag.
type request struct {
	kind, spec string
	do         func(string) error
}

// guestOf is the guest path a flag names.
func guestOf(r request) string {
	switch r.kind {
	case "tmpfs":
		g, _, _ := strings.Cut(r.spec, ":")
		return g
	case "dev":
		return "/dev"
	}
	parts := strings.Split(r.spec, ":")
	if len(parts) == 1 {
		return parts[0]
	}
	return parts[1]
}

// depth counts a path's components.
func depth(p string) int {
	n := 0
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			n++
		}
	}
	return n
}

// next returns where the file system for guest goes. Inside a preopen
// already made (--tmpfs /tmp under --mount /:/), it is that preopen's
// directory for guest, which must exist, and nested is true: the guest
// reaches it through the outer preopen, so that absolute symlinks and ".."
// resolve as in one tree. Otherwise it is a new directory /run/wasi/N of
// the process's namespace, to be preopened as guest.
func (b *preopenBuilder) next(guest string) (dir string, nested bool, err error) {
	if guest == "" || !strings.HasPrefix(guest, "/") {
		return "", false, fmt.Errorf("guest path %q is not absolute", guest)
	}
	guest = filepath.Clean(guest)
	best := -1
	for i, po := range b.preopens {
		if po.Guest == "/" || guest == po.Guest || strings.HasPrefix(guest, po.Guest+"/") {
			if best < 0 || len(po.Guest) > len(b.preopens[best].Guest) {
				best = i
			}
		}
	}
	if best >= 0 {
		po := b.preopens[best]
		if guest == po.Guest {
			return "", false, fmt.Errorf("%s is given twice", guest)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(guest, po.Guest), "/")
		dir = filepath.Join(po.Path, rel)
		st, err := b.p.Stat(dir)
		if err != nil {
			return "", false, fmt.Errorf("no mount point for %s: %w", guest, err)
		}
		if !st.IsDir() {
			return "", false, fmt.Errorf("mount point for %s is not a directory", guest)
		}
		return dir, true, nil
	}
	if b.made == 0 {
		if err := b.p.Mkdir("/run", 0o755); err != nil {
			return "", false, err
		}
		if err := b.p.Mkdir("/run/wasi", 0o755); err != nil {
			return "", false, err
		}
	}
	dir = fmt.Sprintf("/run/wasi/%d", b.made)
	b.made++
	if err := b.p.Mkdir(dir, 0o755); err != nil {
		return "", false, err
	}
	return dir, false, nil
}

func (b *preopenBuilder) add(dir, guest string, nested bool) {
	if !nested {
		b.preopens = append(b.preopens, wasi.Preopen{Path: dir, Guest: filepath.Clean(guest)})
	}
}

// mount is --mount HOSTDIR:GUESTPATH[:ro]: hostfs with xdev, so a mount
// of / reaches the host's /tmp as "wazero run -mount /:/" does.
func (b *preopenBuilder) mount(spec string) error {
	parts := strings.Split(spec, ":")
	var flags uintptr
	if len(parts) == 3 && parts[2] == "ro" {
		flags = unix.MS_RDONLY
		parts = parts[:2]
	}
	if len(parts) == 1 {
		parts = append(parts, parts[0])
	}
	if len(parts) != 2 || parts[0] == "" {
		return errors.New("want HOSTDIR:GUESTPATH[:ro]")
	}
	host, err := filepath.Abs(parts[0])
	if err != nil {
		return err
	}
	dir, nested, err := b.next(parts[1])
	if err != nil {
		return err
	}
	if err := b.p.Mount(host, dir, "hostfs", flags, "xdev"); err != nil {
		return err
	}
	b.add(dir, parts[1], nested)
	return nil
}

// tmpfs is --tmpfs GUESTPATH[:size=N].
func (b *preopenBuilder) tmpfs(spec string) error {
	guest, opts, _ := strings.Cut(spec, ":")
	dir, nested, err := b.next(guest)
	if err != nil {
		return err
	}
	if err := b.p.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		return err
	}
	b.add(dir, guest, nested)
	return nil
}

// image is --image IMAGE:GUESTPATH[:dax]: the host file comes in through
// ImportFile, a free iovfs loop device (read-only, autoclear) carries it,
// and ext4 mounts it read-only, with dax when asked.
func (b *preopenBuilder) image(spec string) error {
	parts := strings.Split(spec, ":")
	data := ""
	if len(parts) == 3 && parts[2] == "dax" {
		data = "dax"
		parts = parts[:2]
	}
	if len(parts) != 2 || parts[0] == "" {
		return errors.New("want IMAGE:GUESTPATH[:dax]")
	}
	f, err := os.Open(parts[0])
	if err != nil {
		return err
	}
	defer f.Close()
	p := b.p
	bfd, err := p.ImportFile(f)
	if err != nil {
		return err
	}
	defer p.Close(bfd)
	ctl, err := p.Open("/dev/loop-control", unix.O_RDWR, 0)
	if err != nil {
		return err
	}
	n, err := p.Ioctl(ctl, unix.LOOP_CTL_GET_FREE, nil)
	p.Close(ctl)
	if err != nil {
		return err
	}
	loopDev := fmt.Sprintf("/dev/loop%d", n)
	lfd, err := p.Open(loopDev, unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer p.Close(lfd)
	if _, err := p.Ioctl(lfd, unix.LOOP_CONFIGURE, &unix.LoopConfig{Fd: uint32(bfd),
		Info: unix.LoopInfo64{Flags: unix.LO_FLAGS_READ_ONLY | unix.LO_FLAGS_AUTOCLEAR}}); err != nil {
		return err
	}
	dir, nested, err := b.next(parts[1])
	if err != nil {
		return err
	}
	if err := mountReadOnly(p, loopDev, dir, data); err != nil { // image.go
		return err
	}
	b.add(dir, parts[1], nested)
	return nil
}

// dev is --dev: a devfs of its own with the four memory devices a program
// may expect, preopened at /dev.
func (b *preopenBuilder) dev() error {
	d := devfs.New()
	for _, x := range []struct {
		name string
		dev  devfs.Device
	}{{"null", mem.Null{}}, {"zero", mem.Zero{}}, {"full", mem.Full{}}, {"urandom", mem.Random{Minor: 9}}} {
		if err := d.Add(x.name, x.dev); err != nil {
			return err
		}
	}
	dir, nested, err := b.next("/dev")
	if err != nil {
		return err
	}
	if err := b.p.Namespace().MountFS(dir, d, false); err != nil {
		return err
	}
	b.add(dir, "/dev", nested)
	return nil
}

// closeAll closes what the process has open, so the pipes of stdioFile
// see the end of their output (iovfs has no descriptor listing; a guest's
// descriptors are low numbers). The standard descriptors need no offset
// copied back: an imported file moves the host's offset itself.
func closeAll(p *vfs.Proc) {
	for fd := 0; fd < 1024; fd++ {
		p.Close(fd)
	}
}

// stdioFile returns w as a host file for the guest: w itself when it is
// one (the usual case: the host's stdout and stderr), otherwise the write
// end of a pipe whose bytes are copied to w. done closes the pipe, after
// the guest's descriptors are gone, and waits for the copy.
func stdioFile(w io.Writer) (*os.File, func(), error) {
	if f, ok := w.(*os.File); ok {
		return f, func() {}, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(w, pr)
		pr.Close()
		close(copied)
	}()
	return pw, func() { pw.Close(); <-copied }, nil
}

// lockWriter serialises writes to w unless it is a file: the messages of
// iovfs run and the copy from the guest's pipe (stdioFile) share it.
func lockWriter(w io.Writer) io.Writer {
	if _, ok := w.(*os.File); ok {
		return w
	}
	return &lockedWriter{w: w}
}

type lockedWriter struct {
	mu sync.Mutex // serialises Write
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
