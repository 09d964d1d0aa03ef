package fat

// Names: long names in UTF-16, 8.3 aliases in code page 437, made and
// compared as Linux's vfat does with its defaults (shortname=mixed,
// utf8, codepage 437; fs/fat/namei_vfat.c and dir.c).

import (
	"fmt"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

const (
	caseLowerBase = 0x08
	caseLowerExt  = 0x10
	maxLongName   = 255 // UTF-16 units (FAT_LFN_LEN)
)

var cp437 = charmap.CodePage437

// stripTail drops trailing dots: a name cannot end in '.' and is treated
// as if it had none (vfat_striptail_len).
func stripTail(name string) string {
	return strings.TrimRight(name, ".")
}

// badChar is vfat_bad_char.
func badChar(r uint16) bool {
	return r < 0x20 || strings.ContainsRune(`*?<>|":/\`, rune(r))
}

// longName converts a name to UTF-16 and checks it as xlate_to_uni and
// vfat_is_used_badchars do: ENAMETOOLONG past 255 units, EINVAL for a
// bad character, a trailing space or bytes that are not UTF-8.
func longName(name string) ([]uint16, error) {
	if !utf8.ValidString(name) {
		return nil, syscall.EINVAL
	}
	u := utf16.Encode([]rune(name))
	if len(u) > maxLongName {
		return nil, syscall.ENAMETOOLONG
	}
	for _, c := range u {
		if badChar(c) {
			return nil, syscall.EINVAL
		}
	}
	if u[len(u)-1] == ' ' {
		return nil, syscall.EINVAL
	}
	return u, nil
}

type shortInfo struct{ lower, upper, valid bool }

func newShortInfo() shortInfo { return shortInfo{true, true, true} }

// toShortChar is to_shortname_char: the code page byte for one UTF-16
// unit of a long name, or 0 bytes for a skipped one.
func toShortChar(c uint16, info *shortInfo) []byte {
	if c == '.' || c == ' ' {
		info.valid = false
		return nil
	}
	if strings.ContainsRune("[];,+=", rune(c)) {
		info.valid = false
		return []byte{'_'}
	}
	b, ok := cp437.EncodeRune(rune(c))
	if !ok || (c >= 0xd800 && c < 0xe000) {
		info.valid = false
		return []byte{'_'}
	}
	prev := b
	if b >= 0x7f {
		info.lower, info.upper = false, false
	}
	b = upper437(b)
	if b < 0x80 && (('A' <= b && b <= 'Z') || ('a' <= b && b <= 'z')) {
		if b == prev {
			info.lower = false
		} else {
			info.upper = false
		}
	}
	return []byte{b}
}

// upper437 is nls_toupper for code page 437.
func upper437(b byte) byte {
	if b < 0x80 {
		if 'a' <= b && b <= 'z' {
			return b - ('a' - 'A')
		}
		return b
	}
	r := cp437.DecodeByte(b)
	u := unicode.ToUpper(r)
	if u == r {
		return b
	}
	if ub, ok := cp437.EncodeRune(u); ok {
		return ub
	}
	return b
}

// lower437 is nls_tolower for code page 437.
func lower437(b byte) byte {
	if b < 0x80 {
		if 'A' <= b && b <= 'Z' {
			return b + ('a' - 'A')
		}
		return b
	}
	r := cp437.DecodeByte(b)
	l := unicode.ToLower(r)
	if l == r {
		return b
	}
	if lb, ok := cp437.EncodeRune(l); ok {
		return lb
	}
	return b
}

// shortName makes the 8.3 alias of the long name u in directory dir, as
// vfat_create_shortname with shortname=mixed (create as Windows 95):
// it returns the 11-byte alias and whether the alias alone holds the
// name (no long entries needed). exists reports whether an alias is
// taken in the directory. tail seeds the ~XXXX numbers past ~9 (Linux
// uses jiffies).
func shortName(u []uint16, exists func([11]byte) bool, tail uint32) (res [11]byte, alone bool, err error) {
	ulen := len(u)
	extStart := -1
	sz := 0
	for i := ulen - 1; i >= 0; i-- {
		if u[i] == '.' {
			if i != ulen-1 {
				extStart = i
			}
			break
		}
	}
	if extStart < 0 {
		sz = ulen
	} else {
		// A name starting with dots, "...test": the part after the
		// last dot is the base, and there is no extension.
		ns := 0
		for ns < extStart && (u[ns] == '.' || u[ns] == ' ') {
			ns++
		}
		if ns != extStart {
			sz = extStart
			extStart++
		} else {
			sz = ulen
			extStart = -1
		}
	}
	isShort := true
	base, ext := newShortInfo(), newShortInfo()
	numtail, numtail2 := 6, 2
	var bb []byte
	for i := 0; i < sz; i++ {
		ch := toShortChar(u[i], &base)
		if len(ch) == 0 {
			continue
		}
		if len(bb) < 2 && len(bb)+len(ch) > 2 {
			numtail2 = len(bb)
		}
		if len(bb) < 6 && len(bb)+len(ch) > 6 {
			numtail = len(bb)
		}
		chi := 0
		for chi = 0; chi < len(ch); chi++ {
			bb = append(bb, ch[chi])
			if len(bb) >= 8 {
				break
			}
		}
		if len(bb) >= 8 {
			if chi < len(ch)-1 || i+1 < sz {
				isShort = false
			}
			break
		}
	}
	if len(bb) == 0 {
		return res, false, syscall.EINVAL
	}
	var eb []byte
	if extStart >= 0 {
		for i := extStart; len(eb) < 3 && i < ulen; i++ {
			ch := toShortChar(u[i], &ext)
			if len(ch) == 0 {
				continue
			}
			if len(eb)+len(ch) > 3 {
				isShort = false
				break
			}
			eb = append(eb, ch...)
			if len(eb) >= 3 {
				if i+1 != ulen {
					isShort = false
				}
				break
			}
		}
	}
	if bb[0] == 0xe5 {
		bb[0] = 0x05
	}
	for i := range res {
		res[i] = ' '
	}
	copy(res[:], bb)
	copy(res[8:], eb)
	if isShort && base.valid && ext.valid {
		if exists(res) {
			return res, false, syscall.EEXIST
		}
		return res, base.upper && ext.upper, nil
	}
	baselen := len(bb)
	if baselen > 6 {
		baselen = numtail
		res[7] = ' '
	}
	res[baselen] = '~'
	for i := 1; i < 10; i++ {
		res[baselen+1] = byte('0' + i)
		if !exists(res) {
			return res, false, nil
		}
	}
	if baselen > 2 {
		baselen = numtail2
		res[7] = ' '
	}
	res[baselen+4] = '~'
	res[baselen+5] = byte('1' + (tail>>16)&7)
	for i := tail; ; i -= 11 {
		copy(res[baselen:], fmt.Sprintf("%04X", i&0xffff))
		if !exists(res) {
			return res, false, nil
		}
	}
}

// checksum is the alias checksum stored in long-name entries
// (fat_checksum).
func checksum(s [11]byte) byte {
	var c byte
	for _, b := range s {
		c = (c&1)<<7 | c>>1
		c += b
	}
	return c
}

// displayShort is fat_parse_short for a vfat mount with shortname=mixed
// (display as Windows NT): the alias with the case flags applied.
func displayShort(s [11]byte, lcase byte) string {
	w := s
	if w[0] == 0x05 {
		w[0] = 0xe5
	}
	var b strings.Builder
	conv := func(part []byte, lower bool) string {
		end := 0
		var out []rune
		for i, c := range part {
			if c == 0 {
				break
			}
			if lower {
				c = lower437(c)
			}
			out = append(out, cp437.DecodeByte(c))
			if c != ' ' {
				end = i + 1
			}
		}
		return string(out[:end])
	}
	base := conv(w[:8], lcase&caseLowerBase != 0)
	ext := conv(w[8:], lcase&caseLowerExt != 0)
	b.WriteString(base)
	if ext != "" {
		b.WriteByte('.')
		b.WriteString(ext)
	}
	return b.String()
}
