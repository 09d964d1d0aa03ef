package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/iovfs/iovfs/block"
)

const partsUsage = `usage: iovfs parts IMAGE

Print IMAGE's partition table as sfdisk -l does: DOS (MBR, with extended and
logical partitions) or GPT (the backup header is used when the primary is
damaged, with a note). The numbers are those IMAGE@N takes, and the kernel's
loopNpN.

options:
  -h, --help  show this help

examples:
  iovfs parts disk.img
  iovfs ls disk.img@2:/      # then a partition by its number
`

func runParts(args []string, stdout, stderr io.Writer) int {
	var operands []string
	for _, a := range args {
		switch {
		case a == "-h" || a == "--help":
			fmt.Fprint(stdout, partsUsage)
			return 0
		case strings.HasPrefix(a, "-") && len(a) > 1:
			return usageError(stderr, "parts", fmt.Sprintf("invalid option '%s'", a))
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) != 1 {
		return usageError(stderr, "parts", "expected one operand IMAGE")
	}
	img := strings.TrimSuffix(operands[0], "@")
	if err := checkImageFile(img); err != nil {
		fmt.Fprintf(stderr, "iovfs parts: %v\n", err)
		return 1
	}
	f, err := os.Open(img)
	if err != nil {
		fmt.Fprintf(stderr, "iovfs parts: %s: %v\n", img, errText(err))
		return 1
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		fmt.Fprintf(stderr, "iovfs parts: %s: %v\n", img, err)
		return 1
	}
	size := st.Size()
	t, err := block.ReadTable(f, size, 512, block.TableOptions{ForceGPT: true})
	sectors := size / 512
	fmt.Fprintf(stdout, "Disk %s: %s, %d bytes, %d sectors\n", img, diskSize(size), size, sectors)
	fmt.Fprintf(stdout, "Units: sectors of 1 * 512 = 512 bytes\n")
	fmt.Fprintf(stdout, "Sector size (logical/physical): 512 bytes / 512 bytes\n")
	if errors.Is(err, block.ErrNoTable) {
		fmt.Fprintf(stdout, "\n(no partition table)\n")
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "iovfs parts: %s: %v\n", img, err)
		return 1
	}
	if t.Backup {
		notef("%s: the primary GPT is damaged; using the backup", img)
	}
	fmt.Fprintf(stdout, "Disklabel type: %s\nDisk identifier: %s\n", t.Kind, t.ID)
	if t.Kind == block.TableGPT {
		fmt.Fprintf(stdout, "First usable sector: %d\nLast usable sector: %d\n", t.FirstLBA, t.LastLBA)
	}
	fmt.Fprintln(stdout)
	// Columns as sfdisk prints them: names left-aligned, numbers right.
	var rows [][]string
	if t.Kind == block.TableDOS {
		rows = append(rows, []string{"Device", "Boot", "Start", "End", "Sectors", "Size", "Id", "Type"})
	} else {
		rows = append(rows, []string{"Device", "Start", "End", "Sectors", "Size", "Type", "Name"})
	}
	for _, p := range t.Parts {
		start := p.Start / 512
		n := p.Size / 512
		if p.Extended {
			// sfdisk shows the container's extent from the table, not
			// the node's two sectors.
			n = extendedSectors(f, p.Number)
		}
		end := start + n - 1
		dev := fmt.Sprintf("%s%d", img, p.Number)
		num := func(v int64) string { return fmt.Sprint(v) }
		if t.Kind == block.TableDOS {
			boot := ""
			if p.Boot {
				boot = "*"
			}
			rows = append(rows, []string{dev, boot, num(start), num(end), num(n), sizeText(n * 512), fmt.Sprintf("%x", p.Type), p.TypeName()})
		} else {
			rows = append(rows, []string{dev, num(start), num(end), num(n), sizeText(n * 512), p.TypeName(), p.Name})
		}
	}
	left := map[int]bool{0: true, len(rows[0]) - 1: true}
	if t.Kind == block.TableGPT {
		left[len(rows[0])-2] = true
	}
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteByte(' ')
			}
			if left[i] {
				if i == len(r)-1 {
					b.WriteString(c)
				} else {
					fmt.Fprintf(&b, "%-*s", width[i], c)
				}
			} else {
				fmt.Fprintf(&b, "%*s", width[i], c)
			}
		}
		fmt.Fprintln(stdout, strings.TrimRight(b.String(), " "))
	}
	return 0
}

// extendedSectors reads the size of primary slot num from the MBR.
func extendedSectors(f *os.File, num int) int64 {
	b := make([]byte, 16)
	if _, err := f.ReadAt(b, int64(0x1be+16*(num-1))); err != nil {
		return 0
	}
	return int64(uint32(b[12]) | uint32(b[13])<<8 | uint32(b[14])<<16 | uint32(b[15])<<24)
}

// sizeText is sfdisk's size column: binary units, one decimal below 10.
func sizeText(n int64) string {
	units := "BKMGTPE"
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	s := fmt.Sprintf("%.1f", v)
	if v >= 10 || s[len(s)-2:] == ".0" {
		s = fmt.Sprintf("%.0f", v)
	}
	if i == 0 {
		return s + "B"
	}
	return s + string(units[i])
}

// diskSize is the size in sfdisk's "Disk" line: "64 MiB", "1.5 GiB".
func diskSize(n int64) string {
	s := sizeText(n)
	if u := s[len(s)-1]; u >= 'A' && u <= 'Z' && u != 'B' {
		return s[:len(s)-1] + " " + string(u) + "iB"
	}
	return strings.TrimSuffix(s, "B") + " B"
}
