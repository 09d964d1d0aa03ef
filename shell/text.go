package shell

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/sysmem"
)

func init() {
	register(&builtin{name: "cat", summary: "concatenate files to standard output", run: runCat})
	register(&builtin{name: "head", summary: "output the first part of files (-n -c)", run: runHead})
	register(&builtin{name: "tail", summary: "output the last part of files (-n -c)", run: runTail})
	register(&builtin{name: "wc", summary: "count lines, words and bytes (-l -w -c)", run: runWc})
	register(&builtin{name: "hexdump", summary: "display file contents in hexadecimal (-C)", run: runHexdump})
	register(&builtin{name: "xxd", summary: "make a hex dump (xxd's default format)", run: runXxd})
}

// openIn opens an operand for reading: "-" is standard input. The closer
// is nil for standard input.
func (c *cmd) openIn(name string) (io.Reader, func(), error) {
	if name == "-" {
		return c.in, func() {}, nil
	}
	fd, err := c.p.Open(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	c.sh.track(fd)
	f := c.p.NewFile(fd, name)
	return f, func() { f.Close() }, nil
}

// copyOut copies r to standard output until end of file, cancellation or
// a closed pipe. It returns the read error, if any.
func (c *cmd) copyOut(r io.Reader) (rerr error, werr error) {
	buf := make([]byte, 64<<10)
	for !c.stopped() {
		n, err := r.Read(buf)
		if n > 0 {
			if _, werr := c.out.Write(buf[:n]); werr != nil {
				return nil, werr
			}
		}
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return err, nil
		}
	}
	return nil, nil
}

func runCat(c *cmd, args []string) int {
	_, ops, bad := getopt(args, "u", nil)
	if bad != "" {
		return c.usage("%s", bad)
	}
	if len(ops) == 0 {
		ops = []string{"-"}
	}
	status := 0
	for _, op := range ops {
		r, done, err := c.openIn(op)
		if err != nil {
			c.errorf("%s: %s", quotef(op), errText(err))
			status = 1
			continue
		}
		rerr, werr := c.copyOut(r)
		done()
		if werr != nil {
			if !c.sigpipe {
				c.errorf("write error: %s", errText(werr))
			}
			return 1
		}
		if rerr != nil {
			c.errorf("%s: %s", quotef(op), errText(rerr))
			status = 1
		}
		if c.stopped() {
			return 1
		}
	}
	return status
}

// parseCount reads head's and tail's -n/-c value, with its + prefix.
func parseCount(s string) (n int64, plus bool, ok bool) {
	if strings.HasPrefix(s, "+") {
		plus, s = true, s[1:]
	}
	mult := int64(1)
	for suf, m := range map[string]int64{"K": 1024, "k": 1024, "M": 1 << 20, "G": 1 << 30, "b": 512, "kB": 1000, "MB": 1000000} {
		if strings.HasSuffix(s, suf) {
			s, mult = strings.TrimSuffix(s, suf), m
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, false, false
	}
	return v * mult, plus, true
}

func runHead(c *cmd, args []string) int { return headTail(c, args, true) }
func runTail(c *cmd, args []string) int { return headTail(c, args, false) }

func headTail(c *cmd, args []string, head bool) int {
	// "-5" is "-n 5", as both tools accept.
	for i, a := range args {
		valueOfPrev := i > 0 && (args[i-1] == "-n" || args[i-1] == "-c")
		if !valueOfPrev && len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			args[i] = "-n" + a[1:]
		}
	}
	opts, ops, bad := getopt(args, "n:c:qv", map[string]string{"lines=": "n", "bytes=": "c", "quiet": "q", "verbose": "v"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	count, plus, bytesMode, allBut := int64(10), false, false, false
	if v := last(opts, "n"); v != "" {
		var ok bool
		if head && strings.HasPrefix(v, "-") {
			allBut, v = true, v[1:]
		}
		if count, plus, ok = parseCount(v); !ok {
			c.errorf("invalid number of lines: %s", quote(v))
			return 1
		}
	}
	if v := last(opts, "c"); v != "" {
		var ok bool
		if head && strings.HasPrefix(v, "-") {
			allBut, v = true, v[1:]
		}
		if count, plus, ok = parseCount(v); !ok {
			c.errorf("invalid number of bytes: %s", quote(v))
			return 1
		}
		bytesMode = true
	}
	if len(ops) == 0 {
		ops = []string{"-"}
	}
	status := 0
	for i, op := range ops {
		r, done, err := c.openIn(op)
		if err != nil {
			verb := "cannot open %s for reading: %s"
			c.errorf(verb, quote(op), errText(err))
			status = 1
			continue
		}
		if (len(ops) > 1 && !has(opts, "q")) || has(opts, "v") {
			if i > 0 {
				fmt.Fprintln(c.out)
			}
			name := op
			if op == "-" {
				name = "standard input"
			}
			fmt.Fprintf(c.out, "==> %s <==\n", name)
		}
		var err2 error
		if head && allBut {
			err2 = c.headAllBut(r, count, bytesMode)
		} else if head {
			err2 = c.head(r, count, bytesMode)
		} else {
			err2 = c.tail(r, count, plus, bytesMode)
		}
		done()
		if err2 != nil && !c.sigpipe {
			c.errorf("error reading %s: %s", quote(op), errText(err2))
			status = 1
		}
	}
	return status
}

func (c *cmd) head(r io.Reader, count int64, bytesMode bool) error {
	if bytesMode {
		_, err := c.copyOut(io.LimitReader(r, count))
		return err
	}
	// A line is written as it comes, 64 KiB at a time: a line without
	// end (head /dev/zero) streams, as GNU head's does, and takes no
	// more memory than the buffer.
	br := bufio.NewReaderSize(r, 64<<10)
	for count > 0 && !c.stopped() {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if _, werr := c.out.Write(line); werr != nil {
				return nil
			}
		}
		if err == bufio.ErrBufferFull {
			continue // the rest of the line
		}
		count--
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// headAllBut is head -n -N and -c -N: all but the last N lines or bytes.
func (c *cmd) headAllBut(r io.Reader, count int64, bytesMode bool) error {
	data, err := c.readAll(r)
	if err != nil {
		return err
	}
	end := int64(len(data))
	if bytesMode {
		end = max(end-count, 0)
	} else {
		i := len(data)
		if i > 0 && data[i-1] == '\n' {
			i--
		}
		for n := int64(0); n < count && i >= 0; n++ {
			i = bytes.LastIndexByte(data[:i], '\n')
		}
		end = int64(i + 1)
	}
	c.out.Write(data[:end])
	return nil
}

func (c *cmd) tail(r io.Reader, count int64, plus, bytesMode bool) error {
	data, err := c.readAll(r)
	if err != nil {
		return err
	}
	if bytesMode {
		start := int64(len(data)) - count
		if plus {
			start = max(count-1, 0)
		}
		start = min(max(start, 0), int64(len(data)))
		c.out.Write(data[start:])
		return nil
	}
	if plus {
		i := 0
		for n := int64(1); n < count && i < len(data); n++ {
			j := bytes.IndexByte(data[i:], '\n')
			if j < 0 {
				i = len(data)
				break
			}
			i += j + 1
		}
		c.out.Write(data[i:])
		return nil
	}
	if count == 0 {
		return nil
	}
	i := len(data)
	if i > 0 && data[i-1] == '\n' {
		i--
	}
	for n := int64(0); n < count; n++ {
		j := bytes.LastIndexByte(data[:i], '\n')
		if j < 0 {
			i = -1
			break
		}
		i = j
	}
	c.out.Write(data[i+1:])
	return nil
}

// readAll reads r to its end, stopping on cancellation.
// readAll reads r to its end, for the builtins that must hold all of
// their input (tail, head -N): at most half the memory available when it
// starts (ENOMEM past it, where GNU's tools report "memory exhausted"),
// and nothing once the command is stopped (ECANCELED).
func (c *cmd) readAll(r io.Reader) ([]byte, error) {
	var b bytes.Buffer
	buf := make([]byte, 64<<10)
	limit := sysmem.Available() / 2
	for {
		if c.stopped() {
			return nil, unix.ECANCELED
		}
		n, err := r.Read(buf)
		if int64(b.Len()+n) > limit {
			return nil, unix.ENOMEM
		}
		b.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

func runWc(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "lwcm", map[string]string{"lines": "l", "words": "w", "bytes": "c", "chars": "m"})
	if bad != "" {
		return c.usage("%s", bad)
	}
	show := [3]bool{has(opts, "l"), has(opts, "w"), has(opts, "c") || has(opts, "m")}
	if !show[0] && !show[1] && !show[2] {
		show = [3]bool{true, true, true}
	}
	nshow := 0
	for _, s := range show {
		if s {
			nshow++
		}
	}
	stdin := len(ops) == 0
	if stdin {
		ops = []string{"-"}
	}
	type res struct {
		name string
		n    [3]int64
		ok   bool
	}
	var rs []res
	var total [3]int64
	status := 0
	width := 1
	var sizes int64
	for _, op := range ops {
		if op == "-" {
			width = 7
		} else if st, err := c.p.Stat(op); err == nil {
			if st.IsRegular() {
				sizes += st.Size
			} else {
				width = 7
			}
		}
	}
	width = max(width, len(strconv.FormatInt(sizes, 10)))
	if nshow == 1 && len(ops) == 1 {
		width = 1
	}
	for _, op := range ops {
		r, done, err := c.openIn(op)
		if err != nil {
			c.errorf("%s: %s", quotef(op), errText(err))
			status = 1
			continue
		}
		var n [3]int64
		inWord := false
		buf := make([]byte, 64<<10)
		var rerr error
		for !c.stopped() {
			k, err := r.Read(buf)
			for _, b := range buf[:k] {
				if b == '\n' {
					n[0]++
				}
				space := b == ' ' || b == '\n' || b == '\t' || b == '\r' || b == '\v' || b == '\f'
				if !space && !inWord {
					n[1]++
				}
				inWord = !space
			}
			n[2] += int64(k)
			if err == io.EOF {
				break
			}
			if err != nil {
				rerr = err
				break
			}
		}
		done()
		if rerr != nil {
			c.errorf("%s: %s", quotef(op), errText(rerr))
			status = 1
		}
		name := op
		if stdin {
			name = ""
		}
		rs = append(rs, res{name, n, true})
		for i := range total {
			total[i] += n[i]
		}
	}
	if c.ctx.Err() != nil {
		return 130
	}
	if len(ops) > 1 {
		rs = append(rs, res{"total", total, true})
	}
	for _, r := range rs {
		var fields []string
		for i, s := range show {
			if s {
				fields = append(fields, fmt.Sprintf("%*d", width, r.n[i]))
			}
		}
		line := strings.Join(fields, " ")
		if r.name != "" {
			line += " " + r.name
		}
		fmt.Fprintln(c.out, line)
	}
	return status
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

func runHexdump(c *cmd, args []string) int {
	opts, ops, bad := getopt(args, "C", nil)
	if bad != "" {
		return c.usage("%s", bad)
	}
	if !has(opts, "C") {
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

func runXxd(c *cmd, args []string) int {
	_, ops, bad := getopt(args, "", nil)
	if bad != "" {
		return c.usage("%s", bad)
	}
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
