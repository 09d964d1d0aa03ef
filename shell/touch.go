package shell

import (
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	register(&builtin{name: "touch", summary: "change file timestamps, create files (-d)",
		minOps: 1, missing: "missing file operand", run: runTouch,
		options: []option{
			{short: 'd', long: "date", arg: needArg, help: "use this time (@SECONDS, YYYY-MM-DD[ HH:MM[:SS]]) instead of now"},
			{short: 'c', long: "no-create", help: "do not create files"},
			{short: 'a', help: "accepted (both times are set)"},
			{short: 'm', help: "accepted (both times are set)"},
		}})
}

// parseDate reads touch -d's date: @SECONDS, RFC 3339, "YYYY-MM-DD
// HH:MM[:SS[.frac]]" or "YYYY-MM-DD", in local time.
func parseDate(s string) (time.Time, bool) {
	if strings.HasPrefix(s, "@") {
		f, err := strconv.ParseFloat(s[1:], 64)
		if err != nil {
			return time.Time{}, false
		}
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)), true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func runTouch(c *cmd, f flags, ops []string) int {
	t := time.Now()
	if d := f.value("d"); d != "" {
		var ok bool
		if t, ok = parseDate(d); !ok {
			c.errorf("invalid date format %s", quote(d))
			return 1
		}
	}
	status := 0
	for _, op := range ops {
		if _, err := c.p.Stat(op); err != nil {
			if f.has("c") {
				continue
			}
			fd, err := c.p.Open(op, unix.O_WRONLY|unix.O_CREAT|unix.O_NONBLOCK, 0o666)
			if err != nil {
				c.errorf("cannot touch %s: %s", quote(op), errText(err))
				status = 1
				continue
			}
			c.p.Close(fd)
		}
		if err := c.p.Utimes(op, t, t); err != nil {
			c.errorf("setting times of %s: %s", quote(op), errText(err))
			status = 1
		}
	}
	return status
}
