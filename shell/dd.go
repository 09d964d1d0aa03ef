package shell

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/sysmem"
)

func init() {
	register(&builtin{name: "dd", summary: "convert and copy a file (if= of= bs= ibs= obs= count= skip= seek= conv= iflag= oflag= status=)",
		synopsis: "[OPERAND]...", style: raw, run: runDd})
}

// ddConfig is what dd's operands ask for.
type ddConfig struct {
	in, out           string // "" for standard input and output
	ibs, obs          int64
	count, skip, seek int64 // count < 0: to the end
	bs                bool  // bs= given: ibs and obs both
	// conv=
	notrunc, sync, fsync, fdatasync, noerror, excl, nocreat bool
	// iflag= and oflag=
	fullblock, countBytes, skipBytes, seekBytes, appendOut bool
	status                                                 string // none, noxfer, progress or ""
}

// ddOperands is dd's operand table: each sets its part of the config
// from the value, or returns GNU's message for a bad one.
var ddOperands = map[string]func(d *ddConfig, v string) string{
	"if":     func(d *ddConfig, v string) string { d.in = v; return "" },
	"of":     func(d *ddConfig, v string) string { d.out = v; return "" },
	"ibs":    func(d *ddConfig, v string) string { return ddBlockSize(&d.ibs, v) },
	"obs":    func(d *ddConfig, v string) string { return ddBlockSize(&d.obs, v) },
	"bs":     func(d *ddConfig, v string) string { d.bs = true; return ddBlockSize(&d.ibs, v) },
	"count":  func(d *ddConfig, v string) string { return ddNumber(&d.count, v) },
	"skip":   func(d *ddConfig, v string) string { return ddNumber(&d.skip, v) },
	"iseek":  func(d *ddConfig, v string) string { return ddNumber(&d.skip, v) },
	"seek":   func(d *ddConfig, v string) string { return ddNumber(&d.seek, v) },
	"oseek":  func(d *ddConfig, v string) string { return ddNumber(&d.seek, v) },
	"conv":   func(d *ddConfig, v string) string { return ddSymbols(ddConvs, d, v, "invalid conversion") },
	"iflag":  func(d *ddConfig, v string) string { return ddSymbols(ddIflags, d, v, "invalid input flag") },
	"oflag":  func(d *ddConfig, v string) string { return ddSymbols(ddOflags, d, v, "invalid output flag") },
	"status": ddStatus,
}

// The symbols of conv=, iflag= and oflag=, each setting one field.
var (
	ddConvs = map[string]func(*ddConfig){
		"notrunc": func(d *ddConfig) { d.notrunc = true }, "sync": func(d *ddConfig) { d.sync = true },
		"fsync": func(d *ddConfig) { d.fsync = true }, "fdatasync": func(d *ddConfig) { d.fdatasync = true },
		"noerror": func(d *ddConfig) { d.noerror = true }, "excl": func(d *ddConfig) { d.excl = true },
		"nocreat": func(d *ddConfig) { d.nocreat = true },
	}
	ddIflags = map[string]func(*ddConfig){
		"fullblock":   func(d *ddConfig) { d.fullblock = true },
		"count_bytes": func(d *ddConfig) { d.countBytes = true },
		"skip_bytes":  func(d *ddConfig) { d.skipBytes = true },
	}
	ddOflags = map[string]func(*ddConfig){
		"seek_bytes": func(d *ddConfig) { d.seekBytes = true },
		"append":     func(d *ddConfig) { d.appendOut = true },
	}
)

func ddNumber(dst *int64, v string) string {
	n, ok := parseSize(v)
	if !ok {
		return "invalid number: " + quote(v)
	}
	*dst = n
	return ""
}

func ddBlockSize(dst *int64, v string) string {
	if msg := ddNumber(dst, v); msg != "" || *dst > 0 {
		return msg
	}
	return "invalid number: " + quote(v)
}

func ddSymbols(table map[string]func(*ddConfig), d *ddConfig, v, what string) string {
	for _, s := range strings.Split(v, ",") {
		set := table[s]
		if set == nil {
			return what + ": " + quote(s)
		}
		set(d)
	}
	return ""
}

func ddStatus(d *ddConfig, v string) string {
	switch v {
	case "none", "noxfer", "progress":
		d.status = v
		return ""
	}
	return "invalid status level: " + quote(v)
}

// parseDd reads dd's operands into a config, or a message and whether
// it is a usage error (which gets the --help hint).
func parseDd(args []string) (*ddConfig, string, bool) {
	d := &ddConfig{ibs: 512, obs: 512, count: -1}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		set := ddOperands[k]
		if !ok || set == nil {
			return nil, "unrecognized operand " + quote(a), true
		}
		if msg := set(d, v); msg != "" {
			return nil, msg, false
		}
	}
	if d.bs {
		d.obs = d.ibs
	}
	return d, "", false
}

func runDd(c *cmd, _ flags, args []string) int {
	d, msg, usage := parseDd(args)
	if usage {
		return c.usage("%s", msg)
	}
	if msg != "" {
		c.errorf("%s", msg)
		return 1
	}
	// The buffers are allocated whole, as GNU dd's are: a size the memory
	// cannot hold is refused before anything is read.
	for _, b := range []struct {
		what string
		n    int64
	}{{"input", d.ibs}, {"output", d.obs}} {
		if err := sysmem.Check(b.n, "buffer"); err != nil || int64(int(b.n)) != b.n {
			c.errorf("memory exhausted by %s buffer of size %d bytes (%s)", b.what, b.n, sysmem.Size(b.n))
			return 1
		}
	}
	skip, seek := d.skip, d.seek
	if !d.skipBytes {
		if skip > math.MaxInt64/d.ibs {
			skip = -1
		} else {
			skip *= d.ibs
		}
	}
	if !d.seekBytes {
		if seek > math.MaxInt64/d.obs {
			seek = -1
		} else {
			seek *= d.obs
		}
	}
	if skip < 0 || seek < 0 {
		c.errorf("offset overflow: skip=%d, seek=%d: %s", d.skip, d.seek, errText(unix.EFBIG))
		return 1
	}
	x := &ddCopy{c: c, d: d, in: c.in, out: c.out}
	if !x.openIn(skip) || !x.openOut(seek) {
		return 1
	}
	status := x.copy()
	if x.outFd >= 0 && status == 0 && (d.fsync || d.fdatasync) {
		if err := c.p.Fsync(x.outFd); err != nil {
			c.errorf("fsync failed for %s: %s", quote(d.out), errText(err))
			status = 1
		}
	}
	x.report()
	return status
}

// ddCopy is one run of dd: its files, counts and start time.
type ddCopy struct {
	c       *cmd
	d       *ddConfig
	in      io.Reader
	out     io.Writer
	inFd    int
	outFd   int
	start   time.Time
	fullIn  int64
	partIn  int64
	fullOut int64
	partOut int64
	total   int64
}

// openIn opens if= (or takes standard input) and skips skip bytes: by
// seeking where the file can, by reading otherwise.
func (x *ddCopy) openIn(skip int64) bool {
	c, d := x.c, x.d
	fd := -1
	x.inFd = -1
	if d.in != "" {
		var err error
		fd, err = c.p.Open(d.in, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			c.errorf("failed to open %s: %s", quote(d.in), errText(err))
			return false
		}
		x.in = c.p.NewFile(fd, d.in)
		x.inFd = fd
	}
	if skip == 0 {
		return true
	}
	if fd >= 0 {
		if _, err := c.p.Seek(fd, skip, io.SeekStart); err == nil {
			return true
		}
	}
	if _, err := io.CopyN(io.Discard, x.in, skip); err != nil && err != io.EOF {
		c.errorf("%s: cannot skip: %s", quotef(d.in), errText(err))
		return false
	}
	return true
}

// openOut opens of= (or takes standard output) and seeks seek bytes,
// truncating there unless conv=notrunc.
func (x *ddCopy) openOut(seek int64) bool {
	c, d := x.c, x.d
	x.outFd = -1
	if d.out == "" {
		return true
	}
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_CLOEXEC
	if d.excl {
		flags |= unix.O_EXCL
	}
	if d.nocreat {
		flags &^= unix.O_CREAT
	}
	if d.appendOut {
		flags |= unix.O_APPEND
	}
	if !d.notrunc && seek == 0 && !d.appendOut {
		flags |= unix.O_TRUNC
	}
	fd, err := c.p.Open(d.out, flags, 0o666)
	if err != nil {
		c.errorf("failed to open %s: %s", quote(d.out), errText(err))
		return false
	}
	x.outFd = fd
	x.out = c.p.NewFile(fd, d.out)
	if seek > 0 {
		if _, err := c.p.Seek(fd, seek, io.SeekStart); err != nil {
			c.errorf("%s: cannot seek: %s", quotef(d.out), errText(err))
			return false
		}
		if !d.notrunc {
			if st, err := c.p.Fstat(fd); err == nil && st.IsRegular() {
				c.p.Ftruncate(fd, seek)
			}
		}
	}
	return true
}

// copy moves the blocks: one read per input block (a pipe may give a
// partial one, unless iflag=fullblock), written out in obs-sized blocks.
func (x *ddCopy) copy() int {
	c, d := x.c, x.d
	x.start = time.Now()
	lastProgress := x.start
	buf := make([]byte, d.ibs)
	var pending []byte
	var inBytes int64
	for {
		want := d.ibs
		if d.count >= 0 {
			if d.countBytes {
				want = min(want, d.count-inBytes)
			} else if x.fullIn+x.partIn >= d.count {
				break
			}
			if want <= 0 {
				break
			}
		}
		if c.stopped() {
			return 1
		}
		n, err := x.read(buf[:want])
		if n == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			c.errorf("error reading %s: %s", quote(d.in), errText(err))
			// conv=noerror goes on past the bad block where the input
			// can seek past it, as GNU dd does.
			if !d.noerror || x.inFd < 0 {
				return 1
			}
			if _, serr := c.p.Seek(x.inFd, d.ibs-int64(n), io.SeekCurrent); serr != nil {
				return 1
			}
			x.partIn++
			if d.sync {
				clear(buf)
				pending = append(pending, buf...)
			}
			continue
		}
		inBytes += int64(n)
		if int64(n) == d.ibs {
			x.fullIn++
		} else {
			x.partIn++
			if d.sync {
				clear(buf[n:])
				n = int(d.ibs)
			}
		}
		pending = append(pending, buf[:n]...)
		if pending, err = x.flush(pending, false); err != nil {
			return x.writeError(err)
		}
		if d.status == "progress" && time.Since(lastProgress) >= time.Second {
			lastProgress = time.Now()
			fmt.Fprintf(c.err, "\r%s", ddSummaryLine(x.total, time.Since(x.start)))
		}
	}
	if _, err := x.flush(pending, true); err != nil {
		return x.writeError(err)
	}
	return 0
}

// read is one read of an input block, or as many as fill it under
// iflag=fullblock.
func (x *ddCopy) read(b []byte) (int, error) {
	if !x.d.fullblock {
		return x.in.Read(b)
	}
	n, err := io.ReadFull(x.in, b)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	if n > 0 && err == io.EOF {
		err = nil
	}
	return n, err
}

// flush writes the whole output blocks held in pending (and, at the end,
// the partial last one) and returns what is left.
func (x *ddCopy) flush(pending []byte, final bool) ([]byte, error) {
	obs := x.d.obs
	for int64(len(pending)) >= obs || final && len(pending) > 0 {
		n := min(int64(len(pending)), obs)
		w, err := x.out.Write(pending[:n])
		x.total += int64(w)
		if int64(w) == obs {
			x.fullOut++
		} else if w > 0 {
			x.partOut++
		}
		if err != nil {
			return pending, err
		}
		pending = pending[n:]
	}
	return pending, nil
}

func (x *ddCopy) writeError(err error) int {
	if !x.c.sigpipe {
		x.c.errorf("error writing %s: %s", quote(x.d.out), errText(err))
	}
	return 1
}

// report prints GNU dd's record counts and transfer line on standard
// error, as status= asks.
func (x *ddCopy) report() {
	c, status := x.c, x.d.status
	elapsed := time.Since(x.start)
	if status == "progress" && elapsed >= time.Second {
		fmt.Fprintln(c.err)
	}
	if status == "none" {
		return
	}
	fmt.Fprintf(c.err, "%d+%d records in\n%d+%d records out\n", x.fullIn, x.partIn, x.fullOut, x.partOut)
	if status != "noxfer" {
		fmt.Fprintln(c.err, ddSummaryLine(x.total, elapsed))
	}
}

// ddHuman is dd's human figure: SI (or IEC with 1024) with one decimal
// below 10, rounded to nearest.
func ddHuman(v float64, base float64, units []string) string {
	u := 0
	for v >= base && u < len(units)-1 {
		v /= base
		u++
	}
	if u == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + units[0]
	}
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[u]
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " " + units[u]
}

// ddSummaryLine is GNU dd's third line: bytes (SI, IEC) copied, seconds,
// rate.
func ddSummaryLine(total int64, d time.Duration) string {
	secs := d.Seconds()
	var b strings.Builder
	if total >= 1000 {
		si := ddHuman(float64(total), 1000, []string{"B", "kB", "MB", "GB", "TB", "PB"})
		iec := ddHuman(float64(total), 1024, []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"})
		fmt.Fprintf(&b, "%d bytes (%s, %s) copied", total, si, iec)
	} else if total == 1 {
		b.WriteString("1 byte copied")
	} else {
		fmt.Fprintf(&b, "%d bytes copied", total)
	}
	rate := "Infinity B/s"
	if secs > 0 {
		r := float64(total) / secs
		if r < 1000 {
			rate = strconv.FormatFloat(r/1000, 'f', 1, 64) + " kB/s"
		} else {
			rate = ddHuman(r, 1000, []string{"B", "kB", "MB", "GB", "TB", "PB"}) + "/s"
		}
	}
	fmt.Fprintf(&b, ", %s s, %s", strconv.FormatFloat(secs, 'g', 6, 64), rate)
	return b.String()
}
