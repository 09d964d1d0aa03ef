package shell

import (
	"io"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/vfs"
)

func init() {
	register(&builtin{name: "tee", summary: "copy standard input to standard output and files (-a)", run: runTee,
		options: []option{
			{short: 'a', long: "append", help: "append to the given FILEs, do not overwrite"},
			{short: 'i', long: "ignore-interrupts", help: "accepted (the shell delivers no signals to builtins)"},
		}})
}

func runTee(c *cmd, f flags, ops []string) int {
	flag := unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
	if f.has("a") {
		flag = unix.O_WRONLY | unix.O_CREAT | unix.O_APPEND
	}
	status := 0
	type dest struct {
		name string
		w    io.Writer
	}
	dests := []dest{{"standard output", c.out}}
	var files []*vfs.File
	defer func() {
		for _, fl := range files {
			fl.Close()
		}
	}()
	for _, op := range ops {
		fd, err := c.p.Open(op, flag, 0o666)
		if err != nil {
			c.errorf("%s: %s", op, errText(err))
			status = 1
			continue
		}
		fl := c.p.NewFile(fd, op)
		files = append(files, fl)
		dests = append(dests, dest{op, fl})
	}
	buf := make([]byte, 64<<10)
	for !c.stopped() {
		n, rerr := c.in.Read(buf)
		if n > 0 {
			// A failed destination is dropped and the others go on, as
			// GNU's tee does.
			live := dests[:0]
			for _, d := range dests {
				if _, err := d.w.Write(buf[:n]); err != nil {
					if d.w == c.out && c.sigpipe {
						return 141
					}
					c.errorf("%s: %s", d.name, errText(err))
					status = 1
					continue
				}
				live = append(live, d)
			}
			dests = live
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			c.errorf("read error: %s", errText(rerr))
			return 1
		}
	}
	return status
}
