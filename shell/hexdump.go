package shell

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
)

func init() {
	register(&builtin{name: "hexdump", summary: "display file contents in hexadecimal (-C)", run: runHexdump,
		options: []option{{short: 'C', long: "canonical", help: "canonical hex+ASCII display"}}})
	register(&builtin{name: "xxd", summary: "make a hex dump (xxd's default format)", run: runXxd})
}

// dumpInput calls line for each 16-byte line of the inputs named by ops
// (standard input for none), read as one stream, with its offset: a
// stream, so that a dump of /dev/zero runs until it is stopped, in
// constant memory. It stops at a read error (reported), a write error
// line returns, cancellation or a closed pipe; it returns the bytes read
// and the status.
func (c *cmd) dumpInput(ops []string, line func(b []byte, off int64) error) (int64, int) {
	if len(ops) == 0 {
		ops = []string{"-"}
	}
	buf := make([]byte, 64<<10)
	n, off := 0, int64(0) // bytes held in buf; offset of buf[0]
	emit := func(final bool) error {
		i := 0
		for ; i+16 <= n || final && i < n; i += 16 {
			if err := line(buf[i:min(i+16, n)], off+int64(i)); err != nil {
				return err
			}
		}
		i = min(i, n)
		copy(buf, buf[i:n])
		off += int64(i)
		n -= i
		return nil
	}
	for _, op := range ops {
		r, done, err := c.openIn(op)
		if err != nil {
			c.errorf("%s: %s", op, errText(err))
			return off + int64(n), 1
		}
		for !c.stopped() {
			m, err := r.Read(buf[n:])
			n += m
			if werr := emit(false); werr != nil {
				done()
				return off + int64(n), 1
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				done()
				c.errorf("%s: %s", op, errText(err))
				return off + int64(n), 1
			}
		}
		done()
		if c.stopped() {
			return off + int64(n), 1
		}
	}
	if err := emit(true); err != nil {
		return off, 1
	}
	return off, 0
}

func printable(b byte) byte {
	if b >= 0x20 && b < 0x7f {
		return b
	}
	return '.'
}

func runHexdump(c *cmd, f flags, ops []string) int {
	if !f.has("C") {
		c.errorf("only the canonical format (-C) is supported")
		return 1
	}
	w := bufio.NewWriter(c.out)
	var prev [16]byte
	havePrev, star := false, false
	total, st := c.dumpInput(ops, func(line []byte, off int64) error {
		if havePrev && len(line) == 16 && bytes.Equal(line, prev[:]) {
			if !star {
				w.WriteString("*\n")
				star = true
			}
			return nil
		}
		star = false
		havePrev = copy(prev[:], line) == 16
		fmt.Fprintf(w, "%08x ", off)
		for i := 0; i < 16; i++ {
			if i == 8 {
				w.WriteByte(' ')
			}
			if i < len(line) {
				fmt.Fprintf(w, " %02x", line[i])
			} else {
				w.WriteString("   ")
			}
		}
		w.WriteString("  |")
		for _, b := range line {
			w.WriteByte(printable(b))
		}
		_, err := w.WriteString("|\n")
		return err
	})
	if st == 0 && total > 0 {
		fmt.Fprintf(w, "%08x\n", total)
	}
	w.Flush()
	return st
}

func runXxd(c *cmd, _ flags, ops []string) int {
	w := bufio.NewWriter(c.out)
	_, st := c.dumpInput(ops, func(line []byte, off int64) error {
		var hex strings.Builder
		for i, b := range line {
			if i > 0 && i%2 == 0 {
				hex.WriteByte(' ')
			}
			fmt.Fprintf(&hex, "%02x", b)
		}
		fmt.Fprintf(w, "%08x: %-39s  ", off, hex.String())
		for _, b := range line {
			w.WriteByte(printable(b))
		}
		return w.WriteByte('\n')
	})
	w.Flush()
	return st
}
