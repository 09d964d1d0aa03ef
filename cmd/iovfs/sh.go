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
	"github.com/iovfs/iovfs/shell"
	"github.com/iovfs/iovfs/vfs"
)

const shUsage = `usage: iovfs sh [options] [-c SCRIPT | FILE [ARGS...]]

Runs a POSIX shell inside the process, on an iovfs namespace (tmpfs at /,
devfs at /dev, tmpfs at /tmp, /mnt). Every command is a builtin; "help"
lists them. Without -c or FILE the shell is interactive.

options:
  -c SCRIPT                        run SCRIPT and exit with its status
  --mount TYPE:SOURCE:TARGET[:OPTS] mount before starting (repeatable);
                                   hostfs:HOSTDIR:TARGET brings a host directory in
  --image IMAGE[:TARGET]           attach a host ext2/3/4 image (ImportFile, loop,
                                   ext4 read-only with dax) at TARGET (/mnt/img)
  --user UID:GID                   run as this unprivileged user
`

func runSh(args []string, stdout, stderr io.Writer) int {
	var script, file string
	var hasScript bool
	var mounts, images []string
	user := ""
	var params []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func() (string, bool) {
			if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "--") {
				return v, true
			}
			if i+1 >= len(args) {
				fmt.Fprintf(stderr, "iovfs sh: %s needs an argument\n", a)
				return "", false
			}
			i++
			return args[i], true
		}
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "-h", "--help", "-help":
			fmt.Fprint(stdout, shUsage)
			return 0
		case "-c":
			v, ok := val()
			if !ok {
				return 2
			}
			script, hasScript = v, true
			params = args[i+1:]
			i = len(args)
		case "--mount":
			v, ok := val()
			if !ok {
				return 2
			}
			mounts = append(mounts, v)
		case "--image":
			v, ok := val()
			if !ok {
				return 2
			}
			images = append(images, v)
		case "--user":
			v, ok := val()
			if !ok {
				return 2
			}
			user = v
		default:
			if strings.HasPrefix(a, "-") {
				fmt.Fprintf(stderr, "iovfs sh: unknown option %s\n%s", a, shUsage)
				return 2
			}
			file = a
			params = args[i+1:]
			i = len(args)
		}
	}

	var dev *devfs.FS
	p, err := iovfs.New(iovfs.WithDevFS(&dev))
	if err != nil {
		fmt.Fprintf(stderr, "iovfs sh: %v\n", err)
		return 1
	}
	for _, m := range mounts {
		f := strings.SplitN(m, ":", 4)
		if len(f) < 3 {
			fmt.Fprintf(stderr, "iovfs sh: --mount %s: want TYPE:SOURCE:TARGET[:OPTS]\n", m)
			return 2
		}
		opts := ""
		if len(f) == 4 {
			opts = f[3]
		}
		if _, err := p.Stat(f[2]); err != nil {
			if err := mkdirAll(p, f[2]); err != nil {
				fmt.Fprintf(stderr, "iovfs sh: --mount %s: %v\n", m, err)
				return 1
			}
		}
		flags, data := mountOpts(opts)
		if err := p.Mount(f[1], f[2], f[0], flags, data); err != nil {
			fmt.Fprintf(stderr, "iovfs sh: --mount %s: %v\n", m, err)
			return 1
		}
	}
	devfsOf[p] = dev
	defer func() {
		if err := closeImages(); err != nil {
			fmt.Fprintf(stderr, "iovfs sh: %v\n", err)
		}
	}()
	for _, im := range images {
		// IMAGE[@PART][:TARGET[:rw]]
		img, target, write := im, "/mnt/img", false
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
		if _, err := attachImage(p, img, target, write); err != nil {
			fmt.Fprintf(stderr, "iovfs sh: --image %s: %v\n", im, err)
			return 1
		}
	}
	if user != "" {
		u, g, _ := strings.Cut(user, ":")
		uid, err1 := strconv.Atoi(u)
		gid, err2 := strconv.Atoi(g)
		if g == "" {
			gid, err2 = uid, nil
		}
		if err1 != nil || err2 != nil {
			fmt.Fprintf(stderr, "iovfs sh: --user %s: want UID:GID\n", user)
			return 2
		}
		err := p.Setgroups(nil)
		if err == nil {
			err = p.Setresgid(gid, gid, gid)
		}
		if err == nil {
			err = p.Setresuid(uid, uid, uid)
		}
		if err != nil {
			fmt.Fprintf(stderr, "iovfs sh: --user %s: %v\n", user, err)
			return 1
		}
	}
	home, _ := os.UserHomeDir()
	o := shell.Options{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Params: params,
		Env: []string{"HOME=/", "USER=" + map[bool]string{true: "root", false: user}[user == ""]},
		Bench: func(ctx context.Context, args []string, out, errw io.Writer) int {
			return runBench(args, out, errw)
		},
	}
	switch {
	case hasScript:
		sh, err := shell.New(p, o)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return sh.RunScript(context.Background(), strings.NewReader(script), "")
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			fmt.Fprintf(stderr, "iovfs sh: %s: %v\n", file, err)
			return 127
		}
		defer f.Close()
		sh, err := shell.New(p, o)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		return sh.RunScript(context.Background(), f, file)
	}
	o.Interactive = true
	sh, err := shell.New(p, o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return interactive(sh, filepath.Join(home, ".iovfs_history"), stdout, stderr)
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
