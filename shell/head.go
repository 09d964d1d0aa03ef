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

var headTailOptions = []option{
	{short: 'n', long: "lines", arg: needArg, help: "the first (head) or last (tail) N lines; head -n -N: all but the last N; tail -n +N: from line N"},
	{short: 'c', long: "bytes", arg: needArg, help: "the same in bytes"},
	{short: 'q', long: "quiet", help: "never print headers giving file names"},
	{short: 'v', long: "verbose", help: "always print headers giving file names"},
}

func init() {
	register(&builtin{name: "head", summary: "output the first part of files (-n -c)", run: runHead,
		options: headTailOptions, obsolete: headTailObsolete})
	register(&builtin{name: "tail", summary: "output the last part of files (-n -c)", run: runTail,
		options: headTailOptions, obsolete: headTailObsolete})
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

// headTailObsolete reads "-5" as "-n 5", as both tools accept.
func headTailObsolete(args []string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		valueOfPrev := i > 0 && (out[i-1] == "-n" || out[i-1] == "-c")
		if !valueOfPrev && len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9' {
			out[i] = "-n" + a[1:]
		}
	}
	return out
}

func runHead(c *cmd, f flags, ops []string) int { return headTail(c, f, ops, true) }
func runTail(c *cmd, f flags, ops []string) int { return headTail(c, f, ops, false) }

func headTail(c *cmd, f flags, ops []string, head bool) int {
	count, plus, bytesMode, allBut := int64(10), false, false, false
	which := f.lastOf("n", "c")
	if v := f.value("n"); which == "n" {
		var ok bool
		if head && strings.HasPrefix(v, "-") {
			allBut, v = true, v[1:]
		}
		if count, plus, ok = parseCount(v); !ok {
			c.errorf("invalid number of lines: %s", quote(v))
			return 1
		}
	}
	if v := f.value("c"); which == "c" {
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
		if (len(ops) > 1 && !f.has("q")) || f.has("v") {
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

// readLine is bufio.Reader.ReadBytes(delim) for the line-at-a-time
// builtins, stopping on cancellation or a closed output pipe within a
// line without end (/dev/zero) instead of growing it until memory runs
// out: then it returns ECANCELED.
func (c *cmd) readLine(br *bufio.Reader, delim byte) ([]byte, error) {
	var line []byte
	for {
		piece, err := br.ReadSlice(delim)
		if err != bufio.ErrBufferFull {
			if line == nil {
				return append([]byte(nil), piece...), err
			}
			return append(line, piece...), err
		}
		line = append(line, piece...)
		if c.stopped() {
			return nil, unix.ECANCELED
		}
	}
}
