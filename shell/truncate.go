package shell

import (
	"math"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "truncate", summary: "shrink or extend a file (-s)", run: runTruncate,
		options: []option{
			{short: 's', long: "size", arg: needArg, help: "set or adjust the size: [+-<>]N[KMGT]"},
			{short: 'c', long: "no-create", help: "do not create files"},
			{short: 'o', long: "io-blocks", help: "accepted"},
		}})
}

// parseSize reads truncate's and dd's sizes: a number with K, M, G, T
// (1024) or KB, MB, GB (1000) or c, w, b (dd's 1, 2, 512).
func parseSize(s string) (int64, bool) {
	mults := []struct {
		suf string
		m   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1000}, {"kB", 1000}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"k", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
		{"c", 1}, {"w", 2}, {"b", 512}}
	m := int64(1)
	for _, x := range mults {
		if strings.HasSuffix(s, x.suf) && len(s) > len(x.suf) {
			s, m = strings.TrimSuffix(s, x.suf), x.m
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64/m {
		return 0, false
	}
	return v * m, true
}

func runTruncate(c *cmd, f flags, ops []string) int {
	spec := f.value("s")
	if spec == "" {
		return c.usage("you must specify either '--size' or '--reference'")
	}
	if len(ops) == 0 {
		return c.usage("missing file operand")
	}
	rel := byte(0)
	if strings.IndexByte("+-<>/%", spec[0]) >= 0 {
		rel, spec = spec[0], spec[1:]
	}
	size, ok := parseSize(spec)
	if !ok {
		c.errorf("Invalid number: %s", quote(f.value("s")))
		return 1
	}
	status := 0
	for _, op := range ops {
		flags := unix.O_WRONLY | unix.O_CREAT | unix.O_NONBLOCK
		if f.has("c") {
			flags &^= unix.O_CREAT
		}
		fd, err := c.p.Open(op, flags, 0o666)
		if err != nil {
			if f.has("c") && isErrno(err, syscall.ENOENT) {
				continue
			}
			c.errorf("cannot open %s for writing: %s", quote(op), errText(err))
			status = 1
			continue
		}
		st, _ := c.p.Fstat(fd)
		n := size
		switch rel {
		case '+':
			n = st.Size + size
		case '-':
			n = max(st.Size-size, 0)
		case '<':
			n = min(st.Size, size)
		case '>':
			n = max(st.Size, size)
		}
		if err := c.p.Ftruncate(fd, n); err != nil {
			c.errorf("failed to truncate %s at %d bytes: %s", quote(op), n, errText(err))
			status = 1
		}
		c.p.Close(fd)
	}
	return status
}
