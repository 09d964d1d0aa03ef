// Package linuxvm runs a test's kernel-side steps in a small Linux
// virtual machine: the Debian kernel installed in /boot, booted under
// QEMU, with the test binary itself as its init. It is the
// oracle for kernel behaviour the host kernel cannot show: a host kernel
// built without partition tables or vfat (as the CI machines' is) still
// boots a distribution kernel that has them.
//
// A test package that uses it calls Main from TestMain; in the guest,
// Main runs the named handler instead of the tests:
//
//	func TestMain(m *testing.M) { linuxvm.Main(m, map[string]linuxvm.Handler{"vfat": vfatGuest}) }
//
// Run boots the machine with disks (raw image files, /dev/vda, vdb...)
// and a request for a handler, and returns the handler's reply. The
// guest has devtmpfs at /dev, proc and sysfs, and the modules the
// request names (with their dependencies) loaded.
package linuxvm

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iovfs/iovfs/internal/testenv"
)

// A Handler runs in the guest: it gets the request's data and returns
// the reply's.
type Handler func(req json.RawMessage) (any, error)

const (
	envGuest  = "IOVFS_LINUXVM"
	beginMark = "IOVFS-LINUXVM-REPLY "
)

type request struct {
	Handler string
	Modules []string
	Data    json.RawMessage
}

type reply struct {
	Data  json.RawMessage
	Error string
}

// Main runs the tests of m, or, inside the guest, the handler the
// request names, and then powers the machine off.
func Main(m *testing.M, handlers map[string]Handler) {
	if os.Getenv(envGuest) != "1" || os.Getpid() != 1 {
		os.Exit(m.Run())
	}
	guest(handlers)
}

func guest(handlers map[string]Handler) {
	defer unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	out := func(r reply) {
		b, _ := json.Marshal(r)
		fmt.Printf("\n%s%s\n", beginMark, base64.StdEncoding.EncodeToString(b))
		os.Stdout.Sync()
	}
	os.MkdirAll("/dev", 0o755)
	unix.Mount("devtmpfs", "/dev", "devtmpfs", 0, "")
	os.MkdirAll("/proc", 0o755)
	unix.Mount("proc", "/proc", "proc", 0, "")
	os.MkdirAll("/sys", 0o755)
	unix.Mount("sysfs", "/sys", "sysfs", 0, "")
	os.MkdirAll("/tmp", 0o1777)
	unix.Mount("tmpfs", "/tmp", "tmpfs", 0, "")
	b, err := os.ReadFile("/request.json")
	if err != nil {
		out(reply{Error: err.Error()})
		return
	}
	var req request
	if err := json.Unmarshal(b, &req); err != nil {
		out(reply{Error: err.Error()})
		return
	}
	for _, mod := range req.Modules {
		f, err := os.Open("/modules/" + mod)
		if err != nil {
			out(reply{Error: err.Error()})
			return
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			out(reply{Error: fmt.Sprintf("insmod %s: %v", mod, err)})
			return
		}
	}
	// Wait for the disks the request attached to appear.
	for i := 0; i < 200; i++ {
		if _, err := os.Stat("/sys/block/vda"); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	h := handlers[req.Handler]
	if h == nil {
		out(reply{Error: "no handler " + req.Handler})
		return
	}
	v, err := h(req.Data)
	if err != nil {
		out(reply{Error: err.Error()})
		return
	}
	d, err := json.Marshal(v)
	if err != nil {
		out(reply{Error: err.Error()})
		return
	}
	out(reply{Data: d})
}

// machine is what a boot needs, found once.
type machine struct {
	qemu, kernel, modDir string
	err                  error
}

var (
	findOnce sync.Once
	found    machine
)

func find() machine {
	findOnce.Do(func() {
		q, err := exec.LookPath("qemu-system-x86_64")
		if err != nil {
			found.err = fmt.Errorf("qemu-system-x86_64 not on PATH (apt package qemu-system-x86)")
			return
		}
		ks, _ := filepath.Glob("/boot/vmlinuz-*")
		sort.Strings(ks)
		for i := len(ks) - 1; i >= 0; i-- {
			ver := strings.TrimPrefix(filepath.Base(ks[i]), "vmlinuz-")
			if _, err := os.Stat("/lib/modules/" + ver + "/modules.dep"); err == nil {
				found = machine{qemu: q, kernel: ks[i], modDir: "/lib/modules/" + ver}
				return
			}
		}
		found.err = fmt.Errorf("no /boot/vmlinuz-* with modules (apt package linux-image-cloud-amd64)")
	})
	return found
}

// Require skips t (or fails it under IOVFS_REQUIRE_PRIVILEGED=1, where
// CI installs QEMU and a kernel) unless a machine can be booted.
func Require(t testing.TB) {
	t.Helper()
	if m := find(); m.err != nil {
		testenv.SkipPrivileged(t, "linuxvm: "+m.err.Error())
	}
}

// modules returns the module files that mods (paths under the kernel's
// module directory without it, such as "kernel/fs/fat/vfat.ko") need,
// in load order.
func (m machine) modules(mods []string) ([]string, error) {
	dep, err := os.ReadFile(filepath.Join(m.modDir, "modules.dep"))
	if err != nil {
		return nil, err
	}
	deps := map[string][]string{}
	for _, l := range strings.Split(string(dep), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok {
			deps[k] = strings.Fields(v)
		}
	}
	var order []string
	seen := map[string]bool{}
	var add func(string) error
	add = func(mod string) error {
		if seen[mod] {
			return nil
		}
		d, ok := deps[mod]
		if !ok {
			return fmt.Errorf("module %s not in modules.dep", mod)
		}
		seen[mod] = true
		for i := len(d) - 1; i >= 0; i-- {
			if err := add(d[i]); err != nil {
				return err
			}
		}
		order = append(order, mod)
		return nil
	}
	for _, mod := range mods {
		if err := add(mod); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// Base modules: the virtio disk.
var baseModules = []string{"kernel/drivers/virtio/virtio_pci.ko", "kernel/drivers/block/virtio_blk.ko"}

// Run boots the machine with the raw image files disks as /dev/vda, vdb
// ..., the modules named (paths in the kernel's module tree, such as
// "kernel/fs/fat/vfat.ko"), and calls the guest's handler with data; the
// reply's data is decoded into out.
func Run(t testing.TB, handler string, modules []string, disks []string, data, out any) error {
	t.Helper()
	m := find()
	if m.err != nil {
		return m.err
	}
	mods, err := m.modules(append(append([]string(nil), baseModules...), modules...))
	if err != nil {
		return err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	var names []string
	for _, mod := range mods {
		names = append(names, filepath.Base(mod))
	}
	req, _ := json.Marshal(request{Handler: handler, Modules: names, Data: raw})
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	dir := t.TempDir()
	initrd := filepath.Join(dir, "initrd.cpio")
	if err := writeInitrd(initrd, exe, m.modDir, mods, req); err != nil {
		return err
	}
	// TCG, not KVM: under the nested hypervisors of CI machines a KVM
	// guest stalls after the kernel's decompressor; TCG boots this
	// kernel in about 25 s. IOVFS_LINUXVM_ACCEL=kvm overrides it.
	accel := "tcg"
	if a := os.Getenv("IOVFS_LINUXVM_ACCEL"); a != "" {
		accel = a
	}
	args := []string{"-accel", accel, "-cpu", "max", "-m", "512", "-smp", "1", "-nographic", "-no-reboot", "-nodefaults",
		"-serial", "stdio", "-kernel", m.kernel, "-initrd", initrd,
		"-append", "console=ttyS0 quiet panic=-1 rdinit=/init " + envGuest + "=1"}
	for _, d := range disks {
		args = append(args, "-drive", "file="+d+",format=raw,if=virtio,cache=unsafe")
	}
	r, _, err := boot(m.qemu, args)
	if err != nil {
		return err
	}
	if r.Error != "" {
		return fmt.Errorf("linuxvm guest: %s", r.Error)
	}
	if out != nil {
		return json.Unmarshal(r.Data, out)
	}
	return nil
}

// writeInitrd writes a newc cpio archive with /init (the test binary),
// the modules under /modules and /request.json.
func writeInitrd(path, exe, modDir string, mods []string, req []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	ino := 1
	put := func(name string, mode uint32, data []byte) {
		fmt.Fprintf(w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
		ino++
		w.WriteString(name)
		w.WriteByte(0)
		pad := func(n int) {
			for n%4 != 0 {
				w.WriteByte(0)
				n++
			}
		}
		pad(110 + len(name) + 1)
		w.Write(data)
		pad(len(data))
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		return err
	}
	put("init", 0o100755, bin)
	// A dynamically linked test binary (the race detector links with the
	// host's C library) takes its loader and libraries along.
	libs, err := sharedLibs(exe)
	if err != nil {
		return err
	}
	made := map[string]bool{}
	for _, lib := range libs {
		b, err := os.ReadFile(lib)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(lib, "/")
		var dirs []string
		for d := filepath.Dir(name); d != "." && !made[d+"/"]; d = filepath.Dir(d) {
			made[d+"/"] = true
			dirs = append([]string{d}, dirs...)
		}
		for _, d := range dirs {
			put(d, 0o40755, nil)
		}
		put(name, 0o100755, b)
	}
	put("modules", 0o40755, nil)
	for _, mod := range mods {
		b, err := os.ReadFile(filepath.Join(modDir, mod))
		if err != nil {
			return err
		}
		put("modules/"+filepath.Base(mod), 0o100644, b)
	}
	put("request.json", 0o100644, req)
	put("TRAILER!!!", 0, nil)
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// boot runs QEMU with args and returns the guest's reply and what the
// console showed.
func boot(qemu string, args []string) (reply, string, error) {
	cmd := exec.Command(qemu, args...)
	var console bytes.Buffer
	cmd.Stdout, cmd.Stderr = &console, &console
	if err := cmd.Start(); err != nil {
		return reply{}, "", err
	}
	timer := time.AfterFunc(5*time.Minute, func() { cmd.Process.Kill() })
	werr := cmd.Wait()
	timer.Stop()
	var r reply
	sc := bufio.NewScanner(bytes.NewReader(console.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if i := strings.Index(l, beginMark); i >= 0 {
			b, err := base64.StdEncoding.DecodeString(l[i+len(beginMark):])
			if err == nil && json.Unmarshal(b, &r) == nil {
				return r, console.String(), nil
			}
		}
	}
	tail := console.String()
	if len(tail) > 4000 {
		tail = tail[len(tail)-4000:]
	}
	return r, console.String(), fmt.Errorf("linuxvm: no reply (qemu: %v); console:\n%q", werr, tail)
}

// sharedLibs returns the host paths of exe's program interpreter and of
// the shared libraries it needs, transitively; none for a static binary.
func sharedLibs(exe string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var visit func(path string, interp bool) error
	visit = func(path string, interp bool) error {
		f, err := elf.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				return err
			}
			ip := strings.TrimRight(string(b), "\x00")
			if !seen[ip] {
				seen[ip] = true
				out = append(out, ip)
			}
		}
		needed, err := f.ImportedLibraries()
		if err != nil {
			return nil // a static binary has no dynamic section
		}
		for _, lib := range needed {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			found := ""
			for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
				if _, err := os.Stat(filepath.Join(dir, lib)); err == nil {
					found = filepath.Join(dir, lib)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("linuxvm: %s needs %s, not found on the host", path, lib)
			}
			out = append(out, found)
			if err := visit(found, false); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(exe, false); err != nil {
		return nil, err
	}
	return out, nil
}
