package jbd2

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iovfs/iovfs/internal/testenv"
)

// The replay is compared with e2fsprogs', whose recovery.c is the
// kernel's: debugfs writes logs (journal_open, journal_write with blocks
// and revokes, journal_close) in each checksum format, and replays them
// (journal_run).

// mkfs makes an 8 MiB ext4 image of 1 KiB blocks, with or without 64bit,
// and returns its path.
func mkfs(t *testing.T, bit64 bool) string {
	t.Helper()
	testenv.RequireTool(t, "mke2fs", "debugfs")
	img := filepath.Join(t.TempDir(), "j.img")
	f := "^64bit"
	if bit64 {
		f = "64bit"
	}
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", "-O", f, img, "8M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v: %s", err, out)
	}
	return img
}

// debugfs runs commands, one a line, in debugfs -w on img.
func debugfs(t *testing.T, img string, cmds ...string) string {
	t.Helper()
	cmd := exec.Command("debugfs", "-w", img)
	cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("debugfs %q: %v: %s", cmds, err, out)
	}
	return string(out)
}

// journalExtents reads the extents of inode 8 from debugfs's stat.
func journalExtents(t *testing.T, img string) []Extent {
	t.Helper()
	out, err := exec.Command("debugfs", "-R", "stat <8>", img).CombinedOutput()
	if err != nil {
		t.Fatalf("debugfs stat: %v: %s", err, out)
	}
	var ext []Extent
	re := regexp.MustCompile(`\((\d+)(?:-(\d+))?\):(\d+)(?:-(\d+))?`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		lo, _ := strconv.ParseUint(m[1], 10, 64)
		hi := lo
		if m[2] != "" {
			hi, _ = strconv.ParseUint(m[2], 10, 64)
		}
		p, _ := strconv.ParseUint(m[3], 10, 64)
		ext = append(ext, Extent{lo, p, hi - lo + 1})
	}
	if len(ext) == 0 {
		t.Fatalf("no journal extents in %s", out)
	}
	return ext
}

// loadDev reads an image file into a Device.
func loadDev(t *testing.T, img string) *memDev {
	t.Helper()
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	return &memDev{b: b, limit: -1}
}

// blockFile writes n blocks of 1 KiB to a file for journal_write: block
// i filled with fill+i, the second beginning with the jbd2 magic (so
// escaped in the log).
func blockFile(t *testing.T, n int, fill byte) string {
	t.Helper()
	p := make([]byte, n*1024)
	for i := range p {
		p[i] = fill + byte(i/1024)
	}
	if n > 1 {
		binary.BigEndian.PutUint32(p[1024:], magic)
	}
	f := filepath.Join(t.TempDir(), fmt.Sprintf("b%d", fill))
	if err := os.WriteFile(f, p, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRecoverE2fsprogs replays logs debugfs wrote (plain, csum v2, csum
// v3; 32- and 64-bit block numbers): three committed transactions, the
// second revoking a block of the first, the third rewriting it, and a
// fourth left without its commit block. Every block the logs name must
// come out as debugfs's replay leaves it, and nothing else may change
// but the journal superblock, whose s_start and s_sequence must be
// e2fsprogs' too.
func TestRecoverE2fsprogs(t *testing.T) {
	for _, bit64 := range []bool{false, true} {
		for _, jo := range []string{"jo", "jo -c -v 2", "jo -c -v 3"} {
			t.Run(fmt.Sprintf("64bit=%v/%s", bit64, jo), func(t *testing.T) {
				img := mkfs(t, bit64)
				debugfs(t, img, jo,
					"jw -b 3000,3001,3002 "+blockFile(t, 3, 10),
					"jw -r 3001",
					"jw -b 3001,3005 "+blockFile(t, 2, 40),
					"jw -b 3006 -c "+blockFile(t, 1, 70),
					"jc")
				ext := journalExtents(t, img)
				orig := loadDev(t, img)
				ours := loadDev(t, img)
				j, err := Open(ours, 1024, ext)
				if err != nil {
					t.Fatal(err)
				}
				n, err := j.Recover(uint64(len(ours.b) / 1024))
				if err != nil || n != 3 {
					t.Fatalf("Recover: %d, %v (want 3 transactions)", n, err)
				}
				debugfs(t, img, "jr")
				theirs := loadDev(t, img)
				jsb := j.devBlock(0)
				for _, b := range []uint64{3000, 3001, 3002, 3005, 3006} {
					if o, k := ours.b[b*1024:][:1024], theirs.b[b*1024:][:1024]; !bytes.Equal(o, k) {
						t.Errorf("block %d: ours %x..., e2fsprogs %x...", b, o[:8], k[:8])
					}
				}
				if ours.b[3001*1024+4] != 40 || ours.b[3006*1024] != 0 {
					t.Errorf("block 3001 %d (want the third transaction's 40), 3006 %d (want 0: uncommitted)", ours.b[3001*1024+4], ours.b[3006*1024])
				}
				for b := uint64(0); b < uint64(len(ours.b)/1024); b++ {
					switch b {
					case 3000, 3001, 3002, 3005, jsb:
						continue
					}
					if !bytes.Equal(ours.b[b*1024:][:1024], orig.b[b*1024:][:1024]) {
						t.Errorf("block %d changed", b)
					}
				}
				osb, ksb := ours.b[jsb*1024:], theirs.b[jsb*1024:]
				if be.Uint32(osb[sbStart:]) != 0 || be.Uint32(osb[sbSequence:]) != be.Uint32(ksb[sbSequence:]) {
					t.Errorf("journal superblock: start %d sequence %d; e2fsprogs start %d sequence %d",
						be.Uint32(osb[sbStart:]), be.Uint32(osb[sbSequence:]), be.Uint32(ksb[sbStart:]), be.Uint32(ksb[sbSequence:]))
				}
			})
		}
	}
}

// TestCommitE2fsprogs writes transactions with Commit in each format and
// cuts the power after the journal superblock points at the log, before
// the checkpoint: debugfs's logdump must find the transaction and its
// replay must write the blocks Commit would have.
func TestCommitE2fsprogs(t *testing.T) {
	for _, bit64 := range []bool{false, true} {
		for _, csum := range []uint32{0, IncompatCsumV2, IncompatCsumV3} {
			t.Run(fmt.Sprintf("64bit=%v/csum=%#x", bit64, csum), func(t *testing.T) {
				img := mkfs(t, bit64)
				d := loadDev(t, img)
				j, err := Open(d, 1024, journalExtents(t, img))
				if err != nil {
					t.Fatal(err)
				}
				_, incompat := j.Features()
				incompat = incompat&^(IncompatCsumV2|IncompatCsumV3) | csum
				if bit64 {
					incompat |= Incompat64bit
				}
				if err := j.SetFeatures(0, incompat); err != nil {
					t.Fatal(err)
				}
				want := map[uint64][]byte{}
				tx := NewTransaction(d, 1024)
				for i, b := range []uint64{3000, 3001, 3002, 4000} {
					p := bytes.Repeat([]byte{byte(0x50 + i)}, 1024)
					if i == 1 {
						binary.BigEndian.PutUint32(p, magic)
					}
					want[b] = p
					tx.WriteAt(p, int64(b)*1024)
				}
				// desc, 4 blocks, commit, the superblock: then the cut.
				d.limit = d.writes + 7
				if err := tx.Commit(j, time.Unix(1700000000, 0)); err == nil {
					t.Fatal("commit survived the cut")
				}
				for b := range want {
					if d.b[b*1024] == want[b][0] {
						t.Fatalf("block %d in place before the cut", b)
					}
				}
				// needs_recovery, so that journal_run replays.
				sb := d.b[1024:2048]
				binary.LittleEndian.PutUint32(sb[0x60:], binary.LittleEndian.Uint32(sb[0x60:])|4)
				binary.LittleEndian.PutUint32(sb[0x3FC:], crc32c(^uint32(0), sb[:0x3FC]))
				if err := os.WriteFile(img, d.b, 0o600); err != nil {
					t.Fatal(err)
				}
				dump, _ := exec.Command("debugfs", "-R", "logdump", img).CombinedOutput()
				if !strings.Contains(string(dump), "type 2 (commit block)") {
					t.Fatalf("logdump finds no commit block:\n%s", dump)
				}
				debugfs(t, img, "jr")
				after := loadDev(t, img)
				for b, p := range want {
					if !bytes.Equal(after.b[b*1024:][:1024], p) {
						t.Errorf("block %d not replayed by e2fsprogs", b)
					}
				}
			})
		}
	}
}
