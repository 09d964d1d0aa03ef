package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/chzyer/readline"
	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/syntax"

	"github.com/iovfs/iovfs"
	"github.com/iovfs/iovfs/fs/devfs"
	"github.com/iovfs/iovfs/fs/overlay"
	"github.com/iovfs/iovfs/shell"
	"github.com/iovfs/iovfs/vfs"
)

const shUsage = `usage: iovfs sh [OPTIONS] [-c SCRIPT [NAME [ARGS...]] | FILE [ARGS...]]

Runs a POSIX shell inside the process, on an iovfs namespace: tmpfs at /,
devfs at /dev (null, zero, full, random, urandom, loop-control, loop0-7,
ram0), tmpfs at /tmp, an empty /mnt. No host program is ever run: a
command is a builtin written in Go ("help" lists them), or a WebAssembly
(wasip1) program found on $PATH in the namespace, run in a process of its
own; pipes, redirections, & and wait work across both. Without -c or FILE
the shell is interactive, with line editing, history (~/.iovfs_history),
tab completion and Ctrl-C.

options:
  -c SCRIPT                          run SCRIPT and exit with its status
  --mount TYPE:SOURCE:TARGET[:OPTS]  mount before starting (repeatable); TYPE is
                                     tmpfs, hostfs (SOURCE a host directory),
                                     ext2, ext3 or ext4 (SOURCE a device in the
                                     namespace); OPTS as mount -o
  --image IMAGE[@PART][:TARGET[:rw]] attach the disk image IMAGE (ext2/3/4 or
                                     FAT; @N its partition N) at TARGET (default
                                     /mnt/img), read-only unless :rw
  --overlay                          make each --image writable: an overlay
                                     (Linux's overlayfs) over it, the changes in
                                     memory, gone at exit; an image at / makes
                                     the overlay the shell's root
  --overlay-dir HOSTDIR              --overlay with the changes kept in
                                     HOSTDIR/upper and HOSTDIR/work, in the
                                     kernel's overlayfs format (one --image)
  --user UID[:GID]                   run as this unprivileged user
  --cachedir DIR                     keep compiled programs in the host directory
                                     DIR across runs (by default they are kept
                                     for the life of the shell only)
  -h, --help                         show this help

examples:
  iovfs sh -c 'mkrd 8192; dd if=/dev/zero of=/tmp/z bs=1M count=4; ls -l /tmp'
  iovfs sh --image disk.img -c 'ls -l /mnt/img; df -h /mnt/img'
  iovfs sh --image disk.img@2:/mnt/root:rw -c 'mkdir /mnt/root/new'
  iovfs sh --mount hostfs:$PWD:/mnt/h -c 'cp -r /mnt/h/docs /tmp; du -sh /tmp/docs'
  iovfs sh --image base.img:/ --overlay-dir changes -c 'echo hi > /etc/motd'
  iovfs sh --user 1000:1000          # interactive, unprivileged
  iovfs sh --mount hostfs:$PWD/bin:/bin -c 'ls -l /tmp | mytool.wasm --count'
`

// shArgs are the parsed arguments of "iovfs sh".
type shArgs struct {
	script, file   string
	hasScript      bool
	mounts, images []string
	user           string
	overlay        bool   // --overlay or --overlay-dir
	overlayDir     string // --overlay-dir
	cacheDir       string
	params         []string
	help           bool
}

// parseShArgs parses the arguments of "iovfs sh". Options end at -c's
// script, at the script FILE, or at "--".
func parseShArgs(args []string) (shArgs, error) {
	a, err := parseShOptions(args)
	if err != nil || a.help {
		return a, err
	}
	switch {
	case a.overlay && len(a.images) == 0:
		return a, errors.New("--overlay and --overlay-dir apply to an --image: none given")
	case a.overlayDir != "" && len(a.images) != 1:
		return a, fmt.Errorf("--overlay-dir keeps the changes of one --image: %d given", len(a.images))
	}
	for _, im := range a.images {
		if _, _, write := shImage(im); a.overlay && write {
			return a, fmt.Errorf("--image %s with --overlay: the overlay takes the changes, the image stays read-only", im)
		}
	}
	return a, nil
}

// parseShOptions parses the options of "iovfs sh", each for itself.
func parseShOptions(args []string) (shArgs, error) {
	var a shArgs
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, inline, hasInline := strings.Cut(arg, "=")
		if !strings.HasPrefix(arg, "--") {
			name, hasInline = arg, false
		}
		val := func() (string, error) {
			if hasInline {
				return inline, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("option %s needs an argument", name)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "-h", "--help", "-help":
			a.help = true
			return a, nil
		case "-c":
			if a.script, err = val(); err != nil {
				return a, err
			}
			a.hasScript, a.params = true, args[i+1:]
			return a, nil
		case "--mount":
			v, err := val()
			if err != nil {
				return a, err
			}
			if f := strings.SplitN(v, ":", 4); len(f) < 3 || f[0] == "" || f[2] == "" {
				return a, fmt.Errorf("--mount %s: want TYPE:SOURCE:TARGET[:OPTS]", v)
			}
			a.mounts = append(a.mounts, v)
		case "--image":
			v, err := val()
			if err != nil {
				return a, err
			}
			if v == "" {
				return a, errors.New("--image needs an image file")
			}
			a.images = append(a.images, v)
		case "--cachedir":
			if a.cacheDir, err = val(); err != nil {
				return a, err
			}
		case "--user":
			if a.user, err = val(); err != nil {
				return a, err
			}
			if _, _, err := parseUser(a.user); err != nil {
				return a, err
			}
		case "--overlay":
			if hasInline {
				return a, errors.New("option --overlay takes no argument")
			}
			a.overlay = true
		case "--overlay-dir":
			if a.overlayDir, err = val(); err != nil {
				return a, err
			}
			if a.overlayDir == "" {
				return a, errors.New("--overlay-dir needs a host directory")
			}
			a.overlay = true
		case "--":
			if i+1 < len(args) {
				a.file, a.params = args[i+1], args[i+2:]
			}
			return a, nil
		default:
			if strings.HasPrefix(arg, "-") && arg != "-" {
				return a, fmt.Errorf("unknown option %s", arg)
			}
			a.file, a.params = arg, args[i+1:]
			return a, nil
		}
	}
	return a, nil
}

// parseUser parses --user UID[:GID]; the group defaults to the uid.
func parseUser(s string) (uid, gid int, err error) {
	u, g, hasG := strings.Cut(s, ":")
	uid64, err1 := strconv.ParseUint(u, 10, 31)
	gid64, err2 := uid64, error(nil)
	if hasG {
		gid64, err2 = strconv.ParseUint(g, 10, 31)
	}
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("--user %s: want UID[:GID], numbers from 0 to 2147483647", s)
	}
	return int(uid64), int(gid64), nil
}

func runSh(args []string, stdout, stderr io.Writer) int {
	c := &cli{name: "sh", stdout: stdout, stderr: stderr}
	a, err := parseShArgs(args)
	if a.help {
		fmt.Fprint(stdout, shUsage)
		return 0
	}
	if err != nil {
		return c.usageError("%v", err)
	}
	var dev *devfs.FS
	opts := []iovfs.Option{iovfs.WithDevFS(&dev)}
	// An overlay over an image at / is the namespace's root: the shell
	// stands in it, with /dev, /tmp and /mnt mounted inside.
	var rootOverlay *overlay.FS
	for _, im := range a.images {
		if img, target, _ := shImage(im); a.overlay && target == "/" {
			fs, err := imageOverlay(img, a.overlayDir) // overlay.go
			if err != nil {
				closeImages()
				return c.fail("--image %s: %v", im, err)
			}
			rootOverlay = fs
			opts = append(opts, iovfs.WithRoot(fs))
			break
		}
	}
	var p *vfs.Proc
	var overlays []*overlayMount
	defer func() {
		for _, o := range overlays {
			o.close(p)
		}
		if rootOverlay != nil {
			rootOverlay.Shutdown()
		}
		if err := closeImages(); err != nil {
			c.errorf("%v", err)
		}
	}()
	p, err = iovfs.New(opts...)
	if err != nil {
		return c.fail("%s", errText(err))
	}
	for _, m := range a.mounts {
		f := strings.SplitN(m, ":", 4)
		opts := ""
		if len(f) == 4 {
			opts = f[3]
		}
		if _, err := p.Stat(f[2]); err != nil {
			if err := mkdirAll(p, f[2]); err != nil {
				return c.fail("--mount %s: %s: %s", m, f[2], errText(err))
			}
		}
		flags, data := mountOpts(opts)
		if err := p.Mount(f[1], f[2], f[0], flags, data); err != nil {
			return c.fail("--mount %s: %s", m, mountMsg(err))
		}
	}
	devfsOf[p] = dev
	for _, im := range a.images {
		img, target, write := shImage(im)
		if a.overlay {
			if target == "/" {
				continue // the root, made above
			}
			o, err := overlayImage(p, img, target, a.overlayDir) // overlay.go
			if err != nil {
				return c.fail("--image %s: %v", im, err)
			}
			overlays = append(overlays, o)
			continue
		}
		if _, err := attachImage(p, img, target, write); err != nil {
			return c.fail("--image %s: %v", im, err)
		}
	}
	user := ""
	if a.user != "" {
		uid, gid, _ := parseUser(a.user)
		err := p.Setgroups(nil)
		if err == nil {
			err = p.Setresgid(gid, gid, gid)
		}
		if err == nil {
			err = p.Setresuid(uid, uid, uid)
		}
		if err != nil {
			return c.fail("--user %s: %s", a.user, errText(err))
		}
		user = a.user
	}
	script, file, hasScript, params := a.script, a.file, a.hasScript, a.params
	home, _ := os.UserHomeDir()
	o := shell.Options{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Params: params,
		Env: []string{"HOME=/", "USER=" + map[bool]string{true: "root", false: user}[user == ""]},
		Bench: func(ctx context.Context, args []string, out, errw io.Writer) int {
			return runBench(args, out, errw)
		},
		CacheDir: a.cacheDir,
	}
	switch {
	case hasScript:
		sh, err := shell.New(p, o)
		if err != nil {
			return c.fail("%v", err)
		}
		defer sh.Close()
		return sh.RunScript(context.Background(), strings.NewReader(script), "")
	case file != "":
		if st, err := os.Stat(file); err == nil && st.IsDir() {
			c.errorf("%s: Is a directory", file)
			return 126 // sh's status for a script it cannot run
		}
		f, err := os.Open(file)
		if err != nil {
			c.errorf("%s: %s", file, errText(err))
			return 127 // sh's status for a script it cannot find
		}
		defer f.Close()
		sh, err := shell.New(p, o)
		if err != nil {
			return c.fail("%v", err)
		}
		defer sh.Close()
		return sh.RunScript(context.Background(), f, file)
	}
	o.Interactive = true
	sh, err := shell.New(p, o)
	if err != nil {
		return c.fail("%v", err)
	}
	defer sh.Close()
	return interactive(sh, filepath.Join(home, ".iovfs_history"), stdout, stderr)
}

// shImage splits --image's IMAGE[@PART][:TARGET[:rw|:ro]].
func shImage(im string) (img, target string, write bool) {
	img, target = im, "/mnt/img"
	if _, err := os.Stat(im); err != nil {
		if spec, rest, ok := splitImageOperand(im); ok {
			img, target = spec, rest
			if t, ok := strings.CutSuffix(rest, ":rw"); ok {
				target, write = t, true
			} else if t, ok := strings.CutSuffix(rest, ":ro"); ok {
				target = t
			}
		}
	}
	return img, target, write
}

// mountOpts splits mount options into flags and data.
func mountOpts(o string) (uintptr, string) {
	var flags uintptr
	var data []string
	for _, opt := range strings.Split(o, ",") {
		switch opt {
		case "":
		case "ro":
			flags |= unix.MS_RDONLY
		case "rw":
		case "bind":
			flags |= unix.MS_BIND
		default:
			data = append(data, opt)
		}
	}
	return flags, strings.Join(data, ",")
}

// interactive reads lines with editing, history (in histFile) and tab
// completion, runs each, and returns the last status on Ctrl-D or exit.
// Ctrl-C at the prompt drops the line; during a command it cancels the
// command (its context), not the shell.
func interactive(sh *shell.Shell, histFile string, stdout, stderr io.Writer) int {
	rl, err := readline.NewEx(&readline.Config{
		Prompt:          prompt(sh),
		HistoryFile:     histFile,
		AutoComplete:    &completer{sh: sh},
		InterruptPrompt: "^C",
		EOFPrompt:       "exit",
		Stdout:          stdout,
		Stderr:          stderr,
	})
	if err != nil {
		fmt.Fprintf(stderr, "iovfs sh: %v\n", err)
		return 1
	}
	defer rl.Close()
	status := 0
	var buf strings.Builder
	for {
		if buf.Len() == 0 {
			sh.Notify() // jobs that ended, as bash reports them before a prompt
			rl.SetPrompt(prompt(sh))
		} else {
			rl.SetPrompt("> ")
		}
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			buf.Reset()
			continue
		}
		if err != nil { // io.EOF: Ctrl-D
			return status
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		f, err := sh.Parse(strings.NewReader(buf.String()), "")
		if err != nil {
			if syntax.IsIncomplete(err) {
				continue
			}
			fmt.Fprintf(stderr, "iovfs sh: %v\n", err)
			buf.Reset()
			status = 2
			continue
		}
		buf.Reset()
		ctx, cancel := context.WithCancel(context.Background())
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		done := make(chan struct{})
		go func() {
			select {
			case <-sig:
				cancel()
			case <-done:
			}
		}()
		var exited bool
		status, exited = sh.Run(ctx, f)
		close(done)
		signal.Stop(sig)
		if ctx.Err() != nil {
			fmt.Fprintln(stdout)
		}
		cancel()
		if exited {
			return status
		}
	}
}

func prompt(sh *shell.Shell) string { return "iovfs:" + sh.Dir() + "# " }

// completer completes command names in the first word and namespace
// paths elsewhere.
type completer struct{ sh *shell.Shell }

func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	s := string(line[:pos])
	start := strings.LastIndexAny(s, " \t|;&<>(") + 1
	word := s[start:]
	first := strings.TrimSpace(s[:start]) == "" || strings.ContainsAny(strings.TrimRight(s[:start], " \t"), "|;&(") && strings.LastIndexAny(strings.TrimRight(s[:start], " \t"), "|;&(") == len(strings.TrimRight(s[:start], " \t"))-1
	var cands []string
	if first && !strings.Contains(word, "/") {
		for _, n := range shell.Builtins() {
			if strings.HasPrefix(n, word) {
				cands = append(cands, n[len(word):]+" ")
			}
		}
	} else {
		cands = completePath(c.sh.Proc(), c.sh.Dir(), word)
	}
	sort.Strings(cands)
	out := make([][]rune, len(cands))
	for i, c := range cands {
		out[i] = []rune(c)
	}
	return out, len([]rune(word))
}

// completePath lists the namespace names that complete word, a path
// relative to dir, as suffixes (directories get a '/').
func completePath(p *vfs.Proc, dir, word string) []string {
	d, base := path.Split(word)
	lookIn := d
	if lookIn == "" {
		lookIn = "."
	}
	if !path.IsAbs(lookIn) {
		lookIn = path.Join(dir, lookIn)
	}
	ents, err := listDir(p, lookIn)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name, base) || strings.HasPrefix(e.Name, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		suffix := e.Name[len(base):]
		if st, err := p.Stat(path.Join(lookIn, e.Name)); err == nil && st.IsDir() {
			suffix += "/"
		} else {
			suffix += " "
		}
		out = append(out, suffix)
	}
	return out
}
