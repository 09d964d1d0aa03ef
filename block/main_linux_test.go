package block_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iovfs/iovfs/internal/linuxvm"
)

func TestMain(m *testing.M) {
	linuxvm.Main(m, map[string]linuxvm.Handler{"parts": guestParts})
}

// guestParts reads the partitions the guest kernel made of each disk
// (vda, vdb, ...): for each, number -> [start, size] in bytes.
func guestParts(req json.RawMessage) (any, error) {
	var disks int
	if err := json.Unmarshal(req, &disks); err != nil {
		return nil, err
	}
	var out []map[int][2]int64
	for i := range disks {
		out = append(out, diskParts(fmt.Sprintf("vd%c", 'a'+i)))
	}
	return out, nil
}

func diskParts(disk string) map[int][2]int64 {
	o := map[int][2]int64{}
	parts, _ := filepath.Glob("/sys/block/" + disk + "/" + disk + "*")
	for _, p := range parts {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), disk))
		if err != nil {
			continue
		}
		s, _ := os.ReadFile(p + "/start")
		c, _ := os.ReadFile(p + "/size")
		si, _ := strconv.ParseInt(strings.TrimSpace(string(s)), 10, 64)
		ci, _ := strconv.ParseInt(strings.TrimSpace(string(c)), 10, 64)
		o[n] = [2]int64{si * 512, ci * 512}
	}
	return o
}
