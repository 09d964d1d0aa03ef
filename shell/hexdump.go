package shell

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "hexdump", summary: "display file contents in hexadecimal (-C -n -s)", run: runHexdump,
		options: []option{
			{short: 'C', long: "canonical", help: "canonical hex+ASCII display"},
			{short: 'n', long: "length", arg: needArg, help: "interpret only LENGTH bytes of input"},
			{short: 's', long: "skip", arg: needArg, help: "skip OFFSET bytes from the beginning"},
			{short: 'v', long: "no-squeezing", help: "output identical lines"},
		}})
	// xxd reads its own options (xxd's, not getopt's: "-l16", "-len 16").
	register(&builtin{name: "xxd", summary: "make a hex dump or reverse one (-l -s -c -g -p -r -u)",
		synopsis: "[options] [infile [outfile]]", style: raw, run: runXxd})
}

// dumpRange is the part of the input a dump shows: from start, length
// bytes (-1: to the end).
type dumpRange struct{ start, length int64 }

// dumpInput calls line for each cols-byte line of the inputs named by
// ops (standard input for none), read as one stream, from r.start for
// r.length bytes, with its offset: a stream, so that a dump of /dev/zero
// runs until it is stopped, in constant memory. It stops at a read error
// (reported), a write error line returns, cancellation or a closed pipe;
// it returns the offset reached, the status and how many inputs it
// opened. An input that cannot be opened is reported and passed over.
func (c *cmd) dumpInput(ops []string, cols int, rg dumpRange, line func(b []byte, off int64) error) (int64, int, int) {
	if len(ops) == 0 {
		ops = []string{"-"}
	}
	buf := make([]byte, 64<<10/cols*cols)
	n, off := 0, int64(0) // bytes held in buf; offset of buf[0]
	skip, left := rg.start, rg.length
	status, opened := 0, 0
	emit := func(final bool) error {
		i := 0
		for ; i+cols <= n || final && i < n; i += cols {
			if err := line(buf[i:min(i+cols, n)], off+int64(i)); err != nil {
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
			status = 1
			continue
		}
		opened++
		if skip > 0 {
			m, err := io.CopyN(io.Discard, r, skip)
			skip -= m
			off += m
			if err != nil && err != io.EOF {
				done()
				c.errorf("%s: %s", op, errText(err))
				return off, 1, opened
			}
			if skip > 0 {
				done()
				continue
			}
		}
		for !c.stopped() && left != 0 {
			want := len(buf)
			if left > 0 {
				want = min(want, n+int(min(left, int64(len(buf)))))
			}
			m, err := r.Read(buf[n:want])
			n += m
			if left > 0 {
				left -= int64(m)
			}
			if werr := emit(false); werr != nil {
				done()
				return off + int64(n), 1, opened
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				done()
				c.errorf("%s: %s", op, errText(err))
				return off + int64(n), 1, opened
			}
		}
		done()
		if c.stopped() {
			return off + int64(n), 1, opened
		}
	}
	if err := emit(true); err != nil {
		return off, 1, opened
	}
	return off, status, opened
}

func printable(b byte) byte {
	if b >= 0x20 && b < 0x7f {
		return b
	}
	return '.'
}

// parseUtilSize is util-linux's strtosize: decimal, 0x hex or 0 octal,
// with K M G T P E (KiB: 1024; KB: 1000).
func parseUtilSize(s string) (int64, bool) {
	num := s
	i := 0
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		i = 2
		for i < len(s) && isHex(s[i]) {
			i++
		}
	} else {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
	}
	num, suf := s[:i], s[i:]
	v, err := strconv.ParseInt(num, 0, 64)
	if err != nil {
		return 0, false
	}
	if suf == "" {
		return v, true
	}
	k := strings.IndexByte("KMGTPE", suf[0]&^0x20)
	if k < 0 {
		return 0, false
	}
	base := int64(1024)
	switch suf[1:] {
	case "", "iB":
	case "B":
		base = 1000
	default:
		return 0, false
	}
	m := int64(1)
	for range k + 1 {
		m *= base
	}
	if v > math.MaxInt64/m {
		return 0, false
	}
	return v * m, true
}

func runHexdump(c *cmd, f flags, ops []string) int {
	rg := dumpRange{length: -1}
	if v, ok := f.last("n"); ok {
		n, ok := parseUtilSize(v)
		if !ok {
			c.errorf("failed to parse length: %s: Invalid argument", quote(v))
			return 1
		}
		rg.length = n
	}
	if v, ok := f.last("s"); ok {
		n, ok := parseUtilSize(v)
		if !ok {
			c.errorf("failed to parse offset: %s: Invalid argument", quote(v))
			return 1
		}
		rg.start = n
	}
	canonical := f.has("C")
	w := bufio.NewWriter(c.out)
	var prev [16]byte
	havePrev, star := false, false
	total, st, opened := c.dumpInput(ops, 16, rg, func(line []byte, off int64) error {
		if !f.has("v") && havePrev && len(line) == 16 && bytes.Equal(line, prev[:]) {
			if !star {
				w.WriteString("*\n")
				star = true
			}
			return nil
		}
		star = false
		havePrev = copy(prev[:], line) == 16
		if !canonical {
			// The default format: 16-bit words in the host's order
			// (little-endian), the last byte of an odd line with a zero.
			fmt.Fprintf(w, "%07x", off)
			for i := 0; i < 16; i += 2 {
				switch {
				case i+1 < len(line):
					fmt.Fprintf(w, " %04x", binary.LittleEndian.Uint16(line[i:]))
				case i < len(line):
					fmt.Fprintf(w, " %04x", line[i])
				default:
					w.WriteString("     ")
				}
			}
			_, err := w.WriteString("\n")
			return err
		}
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
	if opened == 0 {
		c.errorf("all input file arguments failed")
		w.Flush()
		return 1
	}
	if total > 0 || rg.start > 0 {
		if canonical {
			fmt.Fprintf(w, "%08x\n", total)
		} else {
			fmt.Fprintf(w, "%07x\n", total)
		}
	}
	w.Flush()
	return st
}

// xxdOpts are xxd's options.
type xxdOpts struct {
	cols, group    int
	plain, reverse bool
	upper          bool
	seek           string
	length         int64
}

// xxdNumber is xxd's strtol(s, 0): a decimal, 0x hex or 0 octal prefix
// of s, 0 when there is none.
func xxdNumber(s string) int64 {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	i, base := 0, 10
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		i, base = 2, 16
	case strings.HasPrefix(s, "0"):
		base = 8
	}
	j := i
	for j < len(s) && (base == 16 && isHex(s[j]) || base != 16 && s[j] >= '0' && s[j] <= byte('0'+min(base, 10)-1)) {
		j++
	}
	v, _ := strconv.ParseInt(s[i:j], base, 64)
	if neg {
		v = -v
	}
	return v
}

// xxdUsage prints xxd's usage, as it does for a bad option, and returns 1.
func (c *cmd) xxdUsage() int {
	fmt.Fprint(c.err, "Usage:\n       xxd [options] [infile [outfile]]\n    or\n       xxd -r [-s [-]offset] [-c cols] [-ps] [infile [outfile]]\n"+
		"Options:\n    -c cols     format <cols> octets per line. Default 16 (-ps: 30).\n"+
		"    -g bytes    number of octets per group in normal output. Default 2.\n"+
		"    -h          print this summary.\n    -l len      stop after <len> octets.\n"+
		"    -ps         output in postscript plain hexdump style.\n"+
		"    -r          reverse operation: convert (or patch) hexdump into binary.\n"+
		"    -s [+][-]seek  start at <seek> bytes abs. (or +: rel.) infile offset.\n"+
		"    -u          use upper case hex letters.\n")
	return 1
}

func runXxd(c *cmd, _ flags, args []string) int {
	o := xxdOpts{cols: -1, group: -1, length: -1}
	var ops []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || len(ops) > 0 {
			ops = append(ops, a)
			continue
		}
		if a == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		// value reads an option's number: "-l16", "-len16", "-l 16".
		value := func(short, long string) (string, bool) {
			for _, p := range []string{long, short} {
				if strings.HasPrefix(a, p) && (p == short || len(a) >= len(long)) {
					if rest := a[len(p):]; rest != "" {
						return rest, true
					}
					if i+1 < len(args) {
						i++
						return args[i], true
					}
					return "", false
				}
			}
			return "", false
		}
		name := a[1:]
		switch {
		case strings.HasPrefix("ps", name) || strings.HasPrefix("postscript", name) || strings.HasPrefix("plain", name):
			o.plain = true
		case strings.HasPrefix("revert", name):
			o.reverse = true
		case strings.HasPrefix("upper", name):
			o.upper = true
		case strings.HasPrefix("help", name):
			c.xxdUsage()
			return 0
		case a[1] == 'c':
			v, ok := value("-c", "-cols")
			if !ok {
				return c.xxdUsage()
			}
			o.cols = int(min(max(xxdNumber(v), 0), 256))
		case a[1] == 'g':
			v, ok := value("-g", "-groupsize")
			if !ok {
				return c.xxdUsage()
			}
			o.group = int(max(xxdNumber(v), 0))
		case a[1] == 'l':
			v, ok := value("-l", "-len")
			if !ok {
				return c.xxdUsage()
			}
			o.length = max(xxdNumber(v), 0)
		case a[1] == 's':
			v, ok := value("-s", "-skip")
			if !ok {
				return c.xxdUsage()
			}
			o.seek = v
		default:
			return c.xxdUsage()
		}
	}
	if len(ops) > 2 {
		return c.xxdUsage()
	}
	if len(ops) == 2 {
		flag := unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC
		if o.reverse {
			flag = unix.O_WRONLY | unix.O_CREAT // -r patches the file
		}
		fd, err := c.p.Open(ops[1], flag, 0o666)
		if err != nil {
			c.errorf("%s: %s", ops[1], errText(err))
			return 2
		}
		file := c.p.NewFile(fd, ops[1])
		defer file.Close()
		c.out = file
		ops = ops[:1]
	}
	if o.reverse {
		return c.xxdReverse(o, ops)
	}
	switch {
	case o.cols < 0 && o.plain:
		o.cols = 30
	case o.cols <= 0:
		o.cols = 16
	}
	if o.group < 0 {
		o.group = 2
	}
	if o.group == 0 || o.group > o.cols {
		o.group = o.cols
	}
	rg := dumpRange{length: o.length}
	if o.seek != "" {
		s := xxdNumber(o.seek)
		if strings.HasPrefix(strings.TrimPrefix(o.seek, "+"), "-") {
			// From the end: the input must be a file.
			if len(ops) == 0 || ops[0] == "-" {
				c.errorf("Sorry, cannot seek.")
				return 4
			}
			st, err := c.p.Stat(ops[0])
			if err != nil {
				c.errorf("%s: %s", ops[0], errText(err))
				return 2
			}
			s = max(st.Size+s, 0)
		}
		rg.start = s
	}
	if len(ops) == 1 && ops[0] != "-" {
		if _, err := c.p.Stat(ops[0]); err != nil {
			c.errorf("%s: %s", ops[0], errText(err))
			return 2
		}
	}
	hexDigits := "0123456789abcdef"
	if o.upper {
		hexDigits = "0123456789ABCDEF"
	}
	w := bufio.NewWriter(c.out)
	// width is where the ASCII column starts, as xxd computes it.
	grplen := 2*o.group + 1
	width := (grplen*o.cols - 1) / o.group
	line := make([]byte, 0, 1024)
	_, st, _ := c.dumpInput(ops, o.cols, rg, func(b []byte, off int64) error {
		line = line[:0]
		if o.plain {
			for _, x := range b {
				line = append(line, hexDigits[x>>4], hexDigits[x&15])
			}
			line = append(line, '\n')
			_, err := w.Write(line)
			return err
		}
		line = fmt.Appendf(line, "%08x: ", off)
		base := len(line)
		for len(line) < base+width {
			line = append(line, ' ')
		}
		for p, x := range b {
			col := base + grplen*p/o.group
			line[col], line[col+1] = hexDigits[x>>4], hexDigits[x&15]
		}
		line = append(line, ' ', ' ')
		for _, x := range b {
			line = append(line, printable(x))
		}
		line = append(line, '\n')
		_, err := w.Write(line)
		return err
	})
	w.Flush()
	return st
}

// xxdReverse is xxd -r: a normal dump's "OFFSET: HEX..." lines (at most
// cols bytes a line, written at their offsets) or, with -p, plain hex.
func (c *cmd) xxdReverse(o xxdOpts, ops []string) int {
	name := "-"
	if len(ops) == 1 {
		name = ops[0]
	}
	r, done, err := c.openIn(name)
	if err != nil {
		c.errorf("%s: %s", name, errText(err))
		return 2
	}
	defer done()
	cols := o.cols
	if cols <= 0 {
		cols = 16
	}
	data, err := c.readAll(r)
	if err != nil {
		c.errorf("%s: %s", name, errText(err))
		return 2
	}
	w := bufio.NewWriter(c.out)
	pos := int64(0) // bytes written so far
	nib := func(b byte) int {
		switch {
		case b >= '0' && b <= '9':
			return int(b - '0')
		case b >= 'a' && b <= 'f':
			return int(b-'a') + 10
		case b >= 'A' && b <= 'F':
			return int(b-'A') + 10
		}
		return -1
	}
	if o.plain {
		hi := -1
		for _, b := range data {
			n := nib(b)
			if n < 0 {
				continue
			}
			if hi < 0 {
				hi = n
				continue
			}
			w.WriteByte(byte(hi<<4 | n))
			hi = -1
		}
	} else {
		for _, l := range bytes.Split(data, []byte("\n")) {
			colon := bytes.IndexByte(l, ':')
			if colon < 0 {
				continue
			}
			addr, err := strconv.ParseInt(strings.TrimSpace(string(l[:colon])), 16, 64)
			if err != nil {
				continue
			}
			var out []byte
			hi := -1
			for _, b := range l[colon+1:] {
				if b == ' ' || b == '\t' {
					if hi >= 0 {
						break
					}
					continue
				}
				n := nib(b)
				if n < 0 || len(out) >= cols {
					break
				}
				if hi < 0 {
					hi = n
					continue
				}
				out = append(out, byte(hi<<4|n))
				hi = -1
			}
			if len(out) == 0 {
				continue
			}
			if addr > pos {
				// A gap: a file gets a hole, as xxd's fseek makes.
				w.Flush()
				if s, ok := c.out.(io.Seeker); ok {
					if _, err := s.Seek(addr-pos, io.SeekCurrent); err == nil {
						pos = addr
					}
				}
				for ; pos < addr; pos++ {
					w.WriteByte(0)
				}
			}
			w.Write(out)
			pos = addr + int64(len(out))
		}
	}
	if err := w.Flush(); err != nil && c.sigpipe {
		return 141
	}
	return 0
}
