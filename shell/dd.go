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
	register(&builtin{name: "dd", summary: "convert and copy a file (if= of= bs= ibs= obs= count= skip= seek= conv= status=)", run: runDd})
}

// siRate is dd's human figure: SI (or IEC with 1024) with one decimal
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

func runDd(c *cmd, args []string) int {
	ops := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		switch k {
		case "if", "of", "bs", "ibs", "obs", "count", "skip", "seek", "conv", "status", "iflag", "oflag":
		default:
			ok = false
		}
		if !ok {
			c.errorf("unrecognized operand %s", quote(a))
			fmt.Fprintf(c.err, "Try 'dd --help' for more information.\n")
			return 1
		}
		ops[k] = v
	}
	num := func(k string, def int64) (int64, bool) {
		v, ok := ops[k]
		if !ok {
			return def, true
		}
		n, ok := parseSize(v)
		if !ok || (n == 0 && (k == "bs" || k == "ibs" || k == "obs")) {
			c.errorf("invalid number: %s", quote(v))
			return 0, false
		}
		return n, true
	}
	ibs, ok1 := num("ibs", 512)
	obs, ok2 := num("obs", 512)
	count, ok3 := num("count", -1)
	skip, ok4 := num("skip", 0)
	seek, ok5 := num("seek", 0)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return 1
	}
	if _, ok := ops["bs"]; ok {
		bs, ok := num("bs", 512)
		if !ok {
			return 1
		}
		ibs, obs = bs, bs
	}
	// The buffers are allocated whole, as GNU dd's are: a size the memory
	// cannot hold is refused before anything is read.
	for _, b := range []struct {
		what string
		n    int64
	}{{"input", ibs}, {"output", obs}} {
		if err := sysmem.Check(b.n, "buffer"); err != nil || int64(int(b.n)) != b.n {
			c.errorf("memory exhausted by %s buffer of size %d bytes (%s)", b.what, b.n, sysmem.Size(b.n))
			return 1
		}
	}
	if skip > math.MaxInt64/ibs || seek > math.MaxInt64/obs {
		c.errorf("offset overflow: skip=%d, seek=%d: %s", skip, seek, errText(unix.EFBIG))
		return 1
	}
	var notrunc, sync bool
	for _, cv := range strings.Split(ops["conv"], ",") {
		switch cv {
		case "":
		case "notrunc":
			notrunc = true
		case "sync":
			sync = true
		case "fsync", "fdatasync", "noerror":
		default:
			c.errorf("invalid conversion: %s", quote(cv))
			return 1
		}
	}
	status := ops["status"]
	switch status {
	case "", "none", "noxfer", "progress":
	default:
		c.errorf("invalid status level: %s", quote(status))
		return 1
	}

	in, out := 0, 1
	var rin io.Reader = c.in
	var wout io.Writer = c.out
	if name, ok := ops["if"]; ok {
		fd, err := c.p.Open(name, unix.O_RDONLY, 0)
		if err != nil {
			c.errorf("failed to open %s: %s", quote(name), errText(err))
			return 1
		}
		in = c.sh.track(fd)
		rin = c.p.NewFile(fd, name)
	}
	if name, ok := ops["of"]; ok {
		flags := unix.O_WRONLY | unix.O_CREAT
		if !notrunc && seek == 0 {
			flags |= unix.O_TRUNC
		}
		fd, err := c.p.Open(name, flags, 0o666)
		if err != nil {
			c.errorf("failed to open %s: %s", quote(name), errText(err))
			return 1
		}
		out = c.sh.track(fd)
		wout = c.p.NewFile(fd, name)
		if seek > 0 {
			if _, err := c.p.Seek(out, seek*obs, io.SeekStart); err != nil {
				c.errorf("%s: cannot seek: %s", quotef(name), errText(err))
				return 1
			}
			if !notrunc {
				if st, err := c.p.Fstat(out); err == nil && st.IsRegular() {
					c.p.Ftruncate(out, seek*obs)
				}
			}
		}
	}
	if skip > 0 {
		if _, ok := ops["if"]; !ok || func() bool { _, err := c.p.Seek(in, skip*ibs, io.SeekStart); return err != nil }() {
			if _, err := io.CopyN(io.Discard, rin, skip*ibs); err != nil && err != io.EOF {
				c.errorf("%s: cannot skip: %s", quotef(ops["if"]), errText(err))
				return 1
			}
		}
	}
	_ = in
	start := time.Now()
	var fullIn, partIn, fullOut, partOut, total int64
	buf := make([]byte, ibs)
	var pending []byte
	lastProgress := start
	flush := func(final bool) error {
		for int64(len(pending)) >= obs || final && len(pending) > 0 {
			n := min(int64(len(pending)), obs)
			w, err := wout.Write(pending[:n])
			total += int64(w)
			if w == int(obs) {
				fullOut++
			} else if w > 0 {
				partOut++
			}
			if err != nil {
				return err
			}
			pending = pending[n:]
		}
		return nil
	}
	status1 := 0
	for count < 0 || fullIn+partIn < count {
		if c.stopped() {
			status1 = 1
			break
		}
		// One read per input block, as GNU dd: a pipe may give a
		// partial block.
		n, err := rin.Read(buf)
		if n == 0 && err == io.EOF {
			break
		}
		if err != nil && err != io.EOF {
			c.errorf("error reading %s: %s", quote(ops["if"]), errText(err))
			status1 = 1
			break
		}
		if int64(n) == ibs {
			fullIn++
		} else {
			partIn++
			if sync {
				clear(buf[n:])
				n = int(ibs)
			}
		}
		pending = append(pending, buf[:n]...)
		if err := flush(false); err != nil {
			if !c.sigpipe {
				c.errorf("error writing %s: %s", quote(ops["of"]), errText(err))
			}
			status1 = 1
			break
		}
		if status == "progress" && time.Since(lastProgress) >= time.Second {
			lastProgress = time.Now()
			fmt.Fprintf(c.err, "\r%s", ddSummaryLine(total, time.Since(start)))
		}
	}
	if status1 == 0 {
		if err := flush(true); err != nil {
			if !c.sigpipe {
				c.errorf("error writing %s: %s", quote(ops["of"]), errText(err))
			}
			status1 = 1
		}
	}
	elapsed := time.Since(start)
	if status == "progress" && elapsed >= time.Second {
		fmt.Fprintln(c.err)
	}
	if status != "none" {
		fmt.Fprintf(c.err, "%d+%d records in\n%d+%d records out\n", fullIn, partIn, fullOut, partOut)
		if status != "noxfer" {
			fmt.Fprintln(c.err, ddSummaryLine(total, elapsed))
		}
	}
	return status1
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
