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
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/iovfs/iovfs/dev/mem"
	"github.com/iovfs/iovfs/diskimage"
	"github.com/iovfs/iovfs/fs/devfs"
	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/vfs"
	"github.com/iovfs/iovfs/wasi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
)

// preopenFlag is a repeatable preopen option (--mount, --image, --tmpfs):
// each value joins one list, so the preopens keep the order given.
type preopenFlag struct {
	kind string
	list *[]request
	do   func(string) error
}

func (f preopenFlag) String() string { return "" }
func (f preopenFlag) Set(s string) error {
	*f.list = append(*f.list, request{kind: f.kind, spec: s, do: f.do})
	return nil
}

// envFlag is the repeatable --env.
type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, ",") }
func (e *envFlag) Set(s string) error {
	if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE")
	}
	*e = append(*e, s)
	return nil
}

const runUsage = `usage: iovfs run [OPTIONS] PROG.wasm [--] [ARGS...]

Runs the WebAssembly (wasip1) program PROG.wasm with ARGS, its files on
an iovfs process: a drop-in for "wazero run" (wazero v1.12.0) whose
directories are iovfs file systems. stdin, stdout and stderr are the
host's. The exit status is the program's (proc_exit); a trap prints
"iovfs run: PROG: wasm trap: ..." and the wasm stack, and exits 1.

Each of --mount, --image, --tmpfs and --dev is a preopen, given to the
program as descriptors 3, 4, ... in the order of the options. An option
whose GUESTPATH lies inside another's (--tmpfs /tmp with --mount /:/, in
either order) is no preopen of its own: it is mounted inside the other
(whose directory must exist there) and reached through it, so that
absolute symbolic links and ".." resolve as in one tree.

options:
  --mount HOSTDIR[:GUESTPATH][:ro]  the host directory HOSTDIR (hostfs) at
                                    GUESTPATH (default HOSTDIR); read-only with :ro
  --image IMAGE[@PART]:GUESTPATH    the disk image IMAGE (ext2/3/4 or FAT; @N
                                    its partition N), read-only, at GUESTPATH;
                                    ext4 file data is copied straight from the
                                    mapped image (dax; a :dax suffix is accepted)
  --tmpfs GUESTPATH[:OPTIONS]       a new tmpfs at GUESTPATH; OPTIONS as for
                                    mount -t tmpfs (size=64m,mode=1777)
  --overlay                         make each --image writable: an overlay
                                    (Linux's overlayfs) over it whose changes
                                    stay in memory and go at exit
  --overlay-dir HOSTDIR             --overlay with the changes kept in
                                    HOSTDIR/upper and HOSTDIR/work, the kernel's
                                    overlayfs format (one --image)
  --dev                             /dev with null, zero, full and urandom
  --env NAME=VALUE                  set an environment variable (repeatable)
  --env-inherit                     pass the host's environment (before --env)
  --cachedir DIR                    keep compiled code in DIR and reuse it (by
                                    default nothing is written, as wazero run)
  -h, --help                        show this help

examples:
  iovfs run --mount .:/ prog.wasm
  iovfs run --mount /:/ --tmpfs /tmp --dev --env-inherit prog.wasm -test.short
  iovfs run --image disk.img:/img:dax --mount ./data:/data:ro prog.wasm /img
  iovfs run --image base.img:/ --overlay-dir changes --tmpfs /tmp prog.wasm
`

func runRun(args []string, stdout, stderr io.Writer) int {
	stdout, stderr = lockWriter(stdout), lockWriter(stderr)
	c := &cli{name: "run", stdout: stdout, stderr: stderr}
	if wantsHelp(args, true) {
		fmt.Fprint(stdout, runUsage)
		return 0
	}
	var b preopenBuilder
	a, err := parseRunArgs(args, &b)
	if err != nil {
		return c.usageError("%v", err)
	}
	b.overlay, b.overlayDir = a.overlay || a.overlayDir != "", a.overlayDir
	envs, reqs, envInherit, dev, cacheDir := a.envs, a.reqs, &a.envInherit, &a.dev, &a.cacheDir
	prog, guestArgs := a.prog, a.guestArgs
	if st, err := os.Stat(prog); err == nil && st.IsDir() {
		return c.fail("%s: is a directory, not a WebAssembly program", prog)
	}
	bin, err := os.ReadFile(prog)
	if err != nil {
		return c.fail("%s: %s", prog, errText(err))
	}
	var env []string
	if *envInherit {
		env = os.Environ()
	}
	env = append(env, envs...)
	p, err := newProc()
	if err != nil {
		return c.fail("%s", errText(err))
	}
	defer closeImages()
	defer b.closeOverlays() // before closeImages, after closeAll
	outF, outDone, err := stdioFile(stdout)
	if err != nil {
		return c.fail("%s", errText(err))
	}
	defer outDone()
	errF, errDone, err := stdioFile(stderr)
	if err != nil {
		return c.fail("%s", errText(err))
	}
	defer errDone()
	std := []*os.File{os.Stdin, outF, errF}
	// Runs before errDone and outDone, so their pipes see the end.
	defer closeAll(p)
	for _, f := range std {
		if _, err := p.ImportFile(f); err != nil {
			return c.fail("standard descriptor %s: %s", f.Name(), errText(err))
		}
	}
	var cfg wasi.Config
	b.p = p
	if *dev {
		reqs = append(reqs, request{kind: "--dev", spec: "/dev", do: func(string) error { return b.dev() }})
	}
	// Outer guest paths are mounted first, so that an inner one (--tmpfs
	// /tmp with --mount /:/) is mounted inside it; the preopens keep the
	// order given.
	order := make([]int, len(reqs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return depth(guestOf(reqs[order[i]])) < depth(guestOf(reqs[order[j]])) })
	for _, i := range order {
		r := &reqs[i]
		b.cur = r
		if err := r.do(r.spec); err != nil {
			if r.kind == "--dev" {
				return c.fail("--dev: %v", err)
			}
			return c.fail("%s %s: %v", r.kind, r.spec, err)
		}
	}
	for _, r := range reqs {
		if r.preopen != nil {
			cfg.Preopens = append(cfg.Preopens, *r.preopen)
		}
	}

	ctx := context.Background()
	rc := wazero.NewRuntimeConfig()
	if *cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(*cacheDir)
		if err != nil {
			return c.fail("--cachedir %s: %v", *cacheDir, err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	defer r.Close(ctx)
	compiled, err := r.CompileModule(ctx, bin)
	if err != nil {
		return c.fail("%s: not a WebAssembly module wazero can compile: %v", prog, err)
	}
	if _, err := wasi.Instantiate(ctx, r, p, cfg); err != nil {
		return c.fail("%v", err)
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
		return reportWasmError(c, prog, err)
	}
	return 0
}

// runOptions are the parsed arguments of "iovfs run".
type runOptions struct {
	envs            envFlag
	reqs            []request // the preopen options, in the order given
	envInherit, dev bool
	cacheDir        string
	overlay         bool
	overlayDir      string
	prog            string
	guestArgs       []string
}

// parseRunArgs parses the arguments of "iovfs run", or says what is wrong
// with them. The preopen options' requests are set up later by b.
func parseRunArgs(args []string, b *preopenBuilder) (runOptions, error) {
	var a runOptions
	fl := newFlagSet("run")
	fl.Var(&a.envs, "env", "")
	fl.BoolVar(&a.envInherit, "env-inherit", false, "")
	fl.Var(preopenFlag{"--mount", &a.reqs, b.mount}, "mount", "")
	fl.Var(preopenFlag{"--image", &a.reqs, b.image}, "image", "")
	fl.Var(preopenFlag{"--tmpfs", &a.reqs, b.tmpfs}, "tmpfs", "")
	fl.BoolVar(&a.dev, "dev", false, "")
	fl.StringVar(&a.cacheDir, "cachedir", "", "")
	fl.BoolVar(&a.overlay, "overlay", false, "")
	fl.StringVar(&a.overlayDir, "overlay-dir", "", "")
	if err := fl.Parse(args); err != nil {
		return a, errors.New(flagError(err, args))
	}
	images := 0
	for _, r := range a.reqs {
		if r.kind == "--image" {
			images++
		}
	}
	switch {
	case a.overlayDir == "" && flagGiven(fl, "overlay-dir"):
		return a, errors.New("--overlay-dir needs a host directory")
	case (a.overlay || a.overlayDir != "") && images == 0:
		return a, errors.New("--overlay and --overlay-dir apply to an --image: none given")
	case a.overlayDir != "" && images != 1:
		return a, fmt.Errorf("--overlay-dir keeps the changes of one --image: %d given", images)
	}
	if fl.NArg() == 0 {
		return a, errors.New("missing PROG.wasm")
	}
	if a.cacheDir == "" && flagGiven(fl, "cachedir") {
		return a, errors.New("--cachedir needs a directory")
	}
	a.prog, a.guestArgs = fl.Arg(0), fl.Args()[1:]
	if len(a.guestArgs) > 0 && a.guestArgs[0] == "--" {
		a.guestArgs = a.guestArgs[1:]
	}
	return a, nil
}

// flagGiven reports whether the option name was given (perhaps empty).
func flagGiven(fl *flag.FlagSet, name string) bool {
	set := false
	fl.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// reportWasmError prints an error of the program's instantiation or run:
// a trap as "PROG: wasm trap: WHAT" followed by the wasm stack trace
// wazero recorded, anything else (an import no module gives) as one
// line. It returns exit status 1.
func reportWasmError(c *cli, prog string, err error) int {
	first, rest, _ := strings.Cut(err.Error(), "\n")
	// "module[] function[_start] failed: wasm error: unreachable"
	if i := strings.Index(first, "wasm error: "); i >= 0 {
		c.errorf("%s: wasm trap: %s", prog, first[i+len("wasm error: "):])
		if rest = strings.TrimRight(rest, "\n"); rest != "" {
			fmt.Fprintln(c.stderr, rest)
		}
		return 1
	}
	return c.fail("%s: %s", prog, first)
}

// preopenBuilder mounts each preopen at its own directory of the
// process's namespace and names it GUESTPATH for the guest. Messages name
// the options and guest paths, never those directories.
type preopenBuilder struct {
	p   *vfs.Proc
	cur *request // the option being set up
	// overlay makes each image writable through an overlay, its changes
	// in memory or kept in overlayDir.
	overlay    bool
	overlayDir string
	overlays   []*overlay.FS
	// made are the requests set up so far that are preopens, in the
	// order they were set up (outer guest paths first).
	made []*request
}

// request is one preopen option.
type request struct {
	kind, spec string // "--tmpfs", "/tmp:size=64m"
	do         func(string) error
	// preopen is what the option gives the guest; nil for one reached
	// through another preopen.
	preopen *wasi.Preopen
}

// guestOf is the guest path an option names.
func guestOf(r request) string {
	switch r.kind {
	case "--tmpfs":
		g, _, _ := strings.Cut(r.spec, ":")
		return g
	case "--dev":
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
// resolve as in one tree. Otherwise it is a new directory of the
// process's namespace, to be preopened as guest.
func (b *preopenBuilder) next(guest string) (dir string, nested bool, err error) {
	if guest == "" || !strings.HasPrefix(guest, "/") {
		return "", false, fmt.Errorf("the guest path %q is not absolute", guest)
	}
	guest = filepath.Clean(guest)
	var outer *request
	for _, r := range b.made {
		po := r.preopen
		if po.Guest == "/" || guest == po.Guest || strings.HasPrefix(guest, po.Guest+"/") {
			if outer == nil || len(po.Guest) > len(outer.preopen.Guest) {
				outer = r
			}
		}
	}
	if outer != nil {
		po := outer.preopen
		if guest == po.Guest {
			return "", false, fmt.Errorf("%s is already given by %s %s", guest, outer.kind, outer.spec)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(guest, po.Guest), "/")
		dir = path.Join(po.Path, rel)
		st, err := b.p.Stat(dir)
		if err != nil {
			return "", false, fmt.Errorf("%s lies inside %s %s, which has no directory %s to mount it on (%s)", guest, outer.kind, outer.spec, guest, errText(err))
		}
		if !st.IsDir() {
			return "", false, fmt.Errorf("%s lies inside %s %s, where %s is not a directory", guest, outer.kind, outer.spec, guest)
		}
		return dir, true, nil
	}
	if len(b.made) == 0 {
		if err := mkdirAll(b.p, "/run/wasi"); err != nil {
			return "", false, err
		}
	}
	for n := 0; ; n++ {
		dir = fmt.Sprintf("/run/wasi/%d", n)
		if err := b.p.Mkdir(dir, 0o755); err == nil {
			return dir, false, nil
		} else if !errors.Is(err, unix.EEXIST) {
			return "", false, err
		}
	}
}

// add records what the option being set up gives the guest.
func (b *preopenBuilder) add(dir, guest string, nested bool) {
	if !nested {
		b.cur.preopen = &wasi.Preopen{Path: dir, Guest: filepath.Clean(guest)}
		b.made = append(b.made, b.cur)
	}
}

// mount is --mount HOSTDIR[:GUESTPATH][:ro]: hostfs with xdev, so a mount
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
		return errors.New("want HOSTDIR[:GUESTPATH][:ro]")
	}
	host, err := filepath.Abs(parts[0])
	if err != nil {
		return err
	}
	if st, err := os.Stat(host); err != nil {
		return fmt.Errorf("%s: %s", parts[0], errText(err))
	} else if !st.IsDir() {
		return fmt.Errorf("%s: not a directory", parts[0])
	}
	dir, nested, err := b.next(parts[1])
	if err != nil {
		return err
	}
	if err := b.p.Mount(host, dir, "hostfs", flags, "xdev"); err != nil {
		return errors.New(mountMsg(err))
	}
	b.add(dir, parts[1], nested)
	return nil
}

// tmpfs is --tmpfs GUESTPATH[:OPTIONS].
func (b *preopenBuilder) tmpfs(spec string) error {
	guest, opts, _ := strings.Cut(spec, ":")
	dir, nested, err := b.next(guest)
	if err != nil {
		return err
	}
	if err := b.p.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		return errors.New(mountMsg(err))
	}
	b.add(dir, guest, nested)
	return nil
}

// image is --image IMAGE[@PART]:GUESTPATH[:dax]: the image attached
// read-only (attachImage: an iovfs loop device over the imported file,
// ext2/3/4 with dax where the device maps the file, or FAT).
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
	if err := checkImageFile(diskimage.ParseSpec(parts[0]).Path); err != nil {
		return err
	}
	// diskimage mounts ext4 with dax wherever the loop device can map
	// the file, so ":dax" asks for what is done anyway.
	_ = data
	if b.overlay {
		// The image is the lower layer of an overlay preopened in its
		// place; the layers live in a namespace of their own.
		fs, err := imageOverlay(parts[0], b.overlayDir) // overlay.go
		if err != nil {
			return err
		}
		dir, nested, err := b.next(parts[1])
		if err == nil {
			err = b.p.Namespace().MountFS(dir, fs, false)
		}
		if err != nil {
			fs.Shutdown()
			return err
		}
		b.overlays = append(b.overlays, fs)
		b.add(dir, parts[1], nested)
		return nil
	}
	dir, nested, err := b.next(parts[1])
	if err != nil {
		return err
	}
	im, err := attachImage(b.p, parts[0], dir, false) // image.go
	if err != nil {
		return err
	}
	// The image's root descriptor is not the guest's: its number is
	// where the preopens start (fd 3). The mount stays; closeImages
	// unmounts it after closeAll.
	b.p.Close(im.Root())
	b.add(dir, parts[1], nested)
	return nil
}

// closeOverlays lets the overlays' images go, the program having ended.
func (b *preopenBuilder) closeOverlays() {
	for _, fs := range b.overlays {
		fs.Shutdown()
	}
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
		return errors.New(mountMsg(err))
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
