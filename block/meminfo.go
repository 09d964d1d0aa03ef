package block

// meminfo returns MemTotal and MemAvailable, in bytes, from the text of
// /proc/meminfo ("MemTotal:       32795872 kB" lines), without allocating.
func meminfo(b []byte) (total, avail int64, ok bool) {
	total, ok1 := meminfoField(b, "MemTotal")
	avail, ok2 := meminfoField(b, "MemAvailable")
	return total, avail, ok1 && ok2 && total > 0
}

// meminfoField returns the value, in bytes, of the line of b that starts
// with name and a colon: a decimal count of kB.
func meminfoField(b []byte, name string) (int64, bool) {
	for len(b) > 0 {
		line := b
		b = nil
		for i, c := range line {
			if c == '\n' {
				line, b = line[:i], line[i+1:]
				break
			}
		}
		if len(line) <= len(name) || string(line[:len(name)]) != name || line[len(name)] != ':' {
			continue
		}
		var n int64
		digits := false
		for _, c := range line[len(name)+1:] {
			if c >= '0' && c <= '9' {
				if n > 1<<43 { // past 8 EiB in bytes
					return 0, false
				}
				n, digits = n*10+int64(c-'0'), true
			} else if c != ' ' || digits {
				break
			}
		}
		return n << 10, digits
	}
	return 0, false
}
