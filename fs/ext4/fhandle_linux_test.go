package ext4_test

// File handles against the kernel's ext4: name_to_handle_at and
// open_by_handle_at on an image loop-mounted read-write by the kernel and
// the same image mounted by iovfs (read-write, then read-only): the
// handles' bytes for the files the image came with, their shape for new
// ones, and the errnos and files of open_by_handle_at for good, stale,
// short, retyped and forged handles, open unlinked files and reused
// inode numbers; then the handles iovfs made equal the kernel's on a
// kernel mount of the image iovfs wrote.

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/iovfs/iovfs/internal/acldiff"
	"github.com/iovfs/iovfs/internal/testenv"
	"github.com/iovfs/iovfs/vfs"
	"golang.org/x/sys/unix"
)

// handleSide is one system under comparison; paths are relative to its
// mount point.
type handleSide struct {
	nth      func(p string, flags int) (unix.FileHandle, error)
	obh      func(h unix.FileHandle, flags int) (int, error)
	describe func(fd int) string
	close    func(fd int)
	do       func(op, p string) (int, error)
	done     func() // closes the mount's descriptor
}

func kernelHandles(t *testing.T, mnt string) handleSide {
	root, err := unix.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return handleSide{
		done: func() { unix.Close(root) },
		nth: func(p string, flags int) (unix.FileHandle, error) {
			h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, filepath.Join(mnt, p), flags)
			return h, err
		},
		obh: func(h unix.FileHandle, flags int) (int, error) {
			return unix.OpenByHandleAt(root, h, flags|unix.O_CLOEXEC)
		},
		describe: func(fd int) string {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return err.Error()
			}
			b := make([]byte, 32)
			n, err := unix.Pread(fd, b, 0)
			return fmt.Sprintf("%o nlink %d size %d %q %v", st.Mode, st.Nlink, st.Size, b[:max(n, 0)], acldiff.ErrnoOf(err))
		},
		close: func(fd int) { unix.Close(fd) },
		do: func(op, p string) (int, error) {
			p = filepath.Join(mnt, p)
			switch op {
			case "create":
				return unix.Open(p, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o644)
			case "mkdir":
				return -1, unix.Mkdir(p, 0o755)
			case "unlink":
				return -1, unix.Unlink(p)
			}
			return -1, unix.EINVAL
		},
	}
}

func ourHandles(t *testing.T, p *vfs.Proc, mnt string) handleSide {
	root, err := p.Open(mnt, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return handleSide{
		done: func() { p.Close(root) },
		nth: func(q string, flags int) (unix.FileHandle, error) {
			h, _, err := p.NameToHandleAt(unix.AT_FDCWD, mnt+"/"+q, flags)
			return h, err
		},
		obh: func(h unix.FileHandle, flags int) (int, error) {
			return p.OpenByHandleAt(root, h, flags|unix.O_CLOEXEC)
		},
		describe: func(fd int) string {
			st, err := p.Fstat(fd)
			if err != nil {
				return err.Error()
			}
			b := make([]byte, 32)
			n, err := p.Pread(fd, b, 0)
			return fmt.Sprintf("%o nlink %d size %d %q %v", st.Mode, st.Nlink, st.Size, b[:max(n, 0)], acldiff.ErrnoOf(err))
		},
		close: func(fd int) { p.Close(fd) },
		do: func(op, q string) (int, error) {
			q = mnt + "/" + q
			switch op {
			case "create":
				return p.Open(q, unix.O_CREAT|unix.O_RDWR, 0o644)
			case "mkdir":
				return -1, p.Mkdir(q, 0o755)
			case "unlink":
				return -1, p.Unlink(q)
			}
			return -1, unix.EINVAL
		},
	}
}

// handleText is a handle as the test compares it.
func handleText(h unix.FileHandle, err error) string {
	if err != nil {
		return acldiff.ErrnoOf(err).Error()
	}
	return fmt.Sprintf("type %d %x", h.Type(), h.Bytes())
}

// handleShape is a handle's layout, for files whose inode numbers and
// generations differ between the sides: two words, the first the file's
// inode number.
func handleShape(h unix.FileHandle, err error, ino uint64) string {
	if err != nil {
		return acldiff.ErrnoOf(err).Error()
	}
	b := h.Bytes()
	return fmt.Sprintf("type %d len %d ino ok %v", h.Type(), len(b), len(b) >= 4 && uint64(binary.LittleEndian.Uint32(b)) == ino)
}

// forged returns h with its type, its bytes cut to n (if n >= 0), or its
// inode or generation word replaced.
func forged(h unix.FileHandle, typ int32, n int, ino, gen *uint32) unix.FileHandle {
	b := append([]byte(nil), h.Bytes()...)
	if ino != nil && len(b) >= 4 {
		binary.LittleEndian.PutUint32(b, *ino)
	}
	if gen != nil && len(b) >= 8 {
		binary.LittleEndian.PutUint32(b[4:], *gen)
	}
	if n >= 0 {
		b = append(b[:min(n, len(b))], make([]byte, max(0, n-len(b)))...)
	}
	return unix.NewFileHandle(typ, b)
}

func u32(v uint32) *uint32 { return &v }

func TestFileHandleKernel(t *testing.T) {
	testenv.RequireRoot(t, "kernel loop mounts and open_by_handle_at")
	p, kmnt, size := twinMounts(t, mkImage(t, 8192, populate, "-t", "ext4")) // acl_linux_test.go
	ks, os2 := kernelHandles(t, kmnt), ourHandles(t, p, "/mnt")
	sides := []handleSide{ks, os2}
	compared := 0
	cmp := func(what, k, o string) {
		t.Helper()
		compared++
		if k != o {
			t.Errorf("%s:\n kernel %s\n iovfs  %s", what, k, o)
		}
	}
	// open runs open_by_handle_at on a side and describes the result.
	open := func(s handleSide, h unix.FileHandle, flags int) string {
		fd, err := s.obh(h, flags|unix.O_NONBLOCK)
		if err != nil {
			return acldiff.ErrnoOf(err).Error()
		}
		defer s.close(fd)
		return s.describe(fd)
	}
	var inodes uint32
	{
		var st unix.Statfs_t
		unix.Statfs(kmnt, &st)
		inodes = uint32(st.Files)
	}
	// The files the image came with: the same numbers and generations,
	// so the same bytes.
	names := []string{".", "tiny.txt", "a", "a/b/c/deep.txt", "big", "many/f007", "fifo", "fastlink", "slowlink", "dirlink", "lost+found", "nosuch"}
	byName := map[string][2]unix.FileHandle{}
	for _, name := range names {
		for _, fl := range []int{0, unix.AT_SYMLINK_FOLLOW, vfs.AT_HANDLE_CONNECTABLE, vfs.AT_HANDLE_CONNECTABLE | unix.AT_SYMLINK_FOLLOW} {
			kh, kerr := ks.nth(name, fl)
			oh, oerr := os2.nth(name, fl)
			cmp(fmt.Sprintf("name_to_handle_at %s %#x", name, fl), handleText(kh, kerr), handleText(oh, oerr))
			if kerr == nil && oerr == nil && fl == 0 {
				byName[name] = [2]unix.FileHandle{kh, oh}
			}
			if kerr == nil && oerr == nil && fl&vfs.AT_HANDLE_CONNECTABLE != 0 {
				// The connectable handle opens its file.
				cmp(fmt.Sprintf("open_by_handle_at %s connectable %#x", name, fl), open(ks, kh, unix.O_PATH), open(os2, oh, unix.O_PATH))
				cmp(fmt.Sprintf("open_by_handle_at %s connectable %#x", name, fl), open(ks, kh, unix.O_RDONLY), open(os2, oh, unix.O_RDONLY))
			}
		}
	}
	// New files: each side's own numbers and generations.
	for _, s := range sides {
		fd, err := s.do("create", "n1")
		if err != nil {
			t.Fatal(err)
		}
		s.close(fd)
		s.do("mkdir", "d1")
		fd, _ = s.do("create", "d1/in")
		s.close(fd)
	}
	for _, name := range []string{"n1", "d1", "d1/in"} {
		var st unix.Stat_t
		unix.Lstat(filepath.Join(kmnt, name), &st)
		ost, _ := p.Lstat("/mnt/" + name)
		kh, kerr := ks.nth(name, 0)
		oh, oerr := os2.nth(name, 0)
		cmp("name_to_handle_at "+name, handleShape(kh, kerr, st.Ino), handleShape(oh, oerr, ost.Ino))
		byName[name] = [2]unix.FileHandle{kh, oh}
	}

	// open_by_handle_at: each side its own handle, as made and forged.
	for _, name := range append(names, "n1", "d1", "d1/in") {
		hs, ok := byName[name]
		if !ok {
			continue
		}
		for i, f := range []struct {
			what  string
			forge func(h unix.FileHandle) unix.FileHandle
			flags int
		}{
			{"as made", func(h unix.FileHandle) unix.FileHandle { return h }, unix.O_RDONLY},
			{"as made O_PATH", func(h unix.FileHandle) unix.FileHandle { return h }, unix.O_PATH},
			{"as made O_WRONLY", func(h unix.FileHandle) unix.FileHandle { return h }, unix.O_WRONLY | unix.O_NONBLOCK},
			{"generation+1", func(h unix.FileHandle) unix.FileHandle {
				return forged(h, h.Type(), -1, nil, u32(binary.LittleEndian.Uint32(h.Bytes()[4:])+1))
			}, unix.O_RDONLY},
			{"generation 0", func(h unix.FileHandle) unix.FileHandle { return forged(h, h.Type(), -1, nil, u32(0)) }, unix.O_RDONLY},
			{"4 bytes", func(h unix.FileHandle) unix.FileHandle { return forged(h, h.Type(), 4, nil, nil) }, unix.O_RDONLY},
			{"7 bytes", func(h unix.FileHandle) unix.FileHandle { return forged(h, h.Type(), 7, nil, nil) }, unix.O_RDONLY},
			{"12 bytes", func(h unix.FileHandle) unix.FileHandle { return forged(h, h.Type(), 12, nil, nil) }, unix.O_RDONLY},
			{"type 2, 16 bytes", func(h unix.FileHandle) unix.FileHandle { return forged(h, 2, 16, nil, nil) }, unix.O_RDONLY},
			{"type 3", func(h unix.FileHandle) unix.FileHandle { return forged(h, 3, -1, nil, nil) }, unix.O_RDONLY},
			{"type 0x81", func(h unix.FileHandle) unix.FileHandle { return forged(h, 0x81, -1, nil, nil) }, unix.O_RDONLY},
			{"FILEID_IS_DIR", func(h unix.FileHandle) unix.FileHandle { return forged(h, h.Type()|vfs.FILEID_IS_DIR, -1, nil, nil) }, unix.O_RDONLY},
			{"empty", func(h unix.FileHandle) unix.FileHandle { return forged(h, h.Type(), 0, nil, nil) }, unix.O_RDONLY},
		} {
			if name != "tiny.txt" && name != "a" && name != "fastlink" && name != "n1" && name != "d1" && i > 3 {
				continue
			}
			cmp(fmt.Sprintf("open_by_handle_at %s %s", name, f.what), open(ks, f.forge(hs[0]), f.flags), open(os2, f.forge(hs[1]), f.flags))
		}
	}
	// Forged inode numbers, generation 0 (any): the reserved ones, the
	// root, lost+found, one past the last, a free one, 0.
	for _, ino := range []uint32{0, 1, 2, 7, 8, 10, 11, inodes, inodes - 1, inodes + 1, 1 << 31} {
		h := vfs.Ino32GenHandle(vfs.FileID{Ino: uint64(ino)})
		cmp(fmt.Sprintf("open_by_handle_at inode %d", ino), open(ks, h, unix.O_RDONLY), open(os2, h, unix.O_RDONLY))
	}

	// An unlinked file opens while it is open, and not after; its number
	// taken again by a new file does not let the old handle in.
	var kfd, ofd int
	for i, s := range sides {
		fd, err := s.do("create", "gone")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			kfd = fd
		} else {
			ofd = fd
		}
	}
	kh, _ := ks.nth("gone", 0)
	oh, _ := os2.nth("gone", 0)
	for _, s := range sides {
		s.do("unlink", "gone")
	}
	cmp("open_by_handle_at unlinked, open", open(ks, kh, unix.O_RDONLY), open(os2, oh, unix.O_RDONLY))
	ks.close(kfd)
	os2.close(ofd)
	cmp("open_by_handle_at unlinked, closed", open(ks, kh, unix.O_RDONLY), open(os2, oh, unix.O_RDONLY))
	for _, s := range sides {
		fd, _ := s.do("create", "again")
		s.close(fd)
	}
	cmp("open_by_handle_at unlinked, number reused?", open(ks, kh, unix.O_RDONLY), open(os2, oh, unix.O_RDONLY))

	// The image iovfs wrote: clean, and its handles are the kernel's.
	ours := map[string]string{}
	// (fifo is in the image; gone is not.)
	for _, name := range []string{".", "tiny.txt", "a", "n1", "d1", "d1/in", "again", "fastlink"} {
		ours[name] = handleText(os2.nth(name, 0))
	}
	ks.done()
	os2.done()
	if t.Failed() {
		return
	}
	oimg := writtenImage(t, p, size)
	omnt := kernelMount(t, oimg)
	for _, name := range []string{".", "tiny.txt", "a", "n1", "d1", "d1/in", "again", "fastlink"} {
		h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, filepath.Join(omnt, name), 0)
		cmp("the kernel's handle of iovfs's "+name, handleText(h, err), ours[name])
	}

	// Read-only: the same image in iovfs, against the kernel's read-only
	// mount of it.
	ro := mountImage(t, oimg, viaRAM, "")
	kr, or := kernelHandles(t, omnt), ourHandles(t, ro, "/mnt")
	defer kr.done()
	defer or.done()
	for _, name := range []string{".", "tiny.txt", "a", "n1", "d1/in", "again", "fifo", "fastlink", "gone"} {
		kh, kerr := kr.nth(name, 0)
		oh, oerr := or.nth(name, 0)
		cmp("read-only name_to_handle_at "+name, handleText(kh, kerr), handleText(oh, oerr))
		if kerr == nil && oerr == nil {
			cmp("read-only open_by_handle_at "+name, open(kr, kh, unix.O_RDONLY), open(or, oh, unix.O_RDONLY))
			g := forged(kh, kh.Type(), -1, nil, u32(binary.LittleEndian.Uint32(kh.Bytes()[4:])+1))
			cmp("read-only open_by_handle_at stale "+name, open(kr, g, unix.O_RDONLY), open(or, g, unix.O_RDONLY))
		}
	}
	for _, ino := range []uint32{0, 2, 8, 11, inodes - 1, inodes + 1} {
		h := vfs.Ino32GenHandle(vfs.FileID{Ino: uint64(ino)})
		cmp(fmt.Sprintf("read-only open_by_handle_at inode %d", ino), open(kr, h, unix.O_RDONLY), open(or, h, unix.O_RDONLY))
	}
	t.Logf("%d results compared", compared)
}

// TestFileHandleRace decodes handles of files that other goroutines
// unlink and make again (reusing their inode numbers) at GOMAXPROCS 8:
// each open either finds the file the handle was made of, with its
// content, or gives ESTALE; the image stays clean.
func TestFileHandleRace(t *testing.T) {
	testenv.RequireRoot(t, "open_by_handle_at needs CAP_DAC_READ_SEARCH")
	img := mkImage(t, 8192, func(testing.TB, string) {}, "-t", "ext4")
	b, _ := os.ReadFile(img)
	p, dev, done := newProc(t, img, viaRAM)
	err := p.Mount(dev, "/mnt", "ext4", 0, "")
	done()
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	root, err := p.Open("/mnt", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	const files, rounds = 4, 300
	var wg sync.WaitGroup
	var opened, stale atomic.Int64
	for w := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("/mnt/f%d", w)
			for r := range rounds {
				content := fmt.Sprintf("%d-%d", w, r)
				fd, err := p.Open(name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
				if err != nil {
					t.Error(err)
					return
				}
				p.Write(fd, []byte(content))
				p.Close(fd)
				h, _, err := p.NameToHandleAt(unix.AT_FDCWD, name, 0)
				if err != nil {
					t.Error(err)
					return
				}
				// One open before the unlink, which must find the file,
				// and two beside it.
				var rw sync.WaitGroup
				for i := range 3 {
					rw.Add(1)
					open := func() {
						defer rw.Done()
						fd, err := p.OpenByHandleAt(root, h, unix.O_RDONLY)
						if err == unix.ESTALE && i > 0 {
							stale.Add(1)
							return
						}
						if err != nil {
							t.Errorf("open_by_handle_at: %v", err)
							return
						}
						buf := make([]byte, 32)
						n, _ := p.Pread(fd, buf, 0)
						p.Close(fd)
						if string(buf[:n]) != content {
							t.Errorf("handle of %q opened %q", content, buf[:n])
						}
						opened.Add(1)
					}
					if i == 0 {
						open()
					} else {
						go open()
					}
				}
				if err := p.Unlink(name); err != nil {
					t.Error(err)
				}
				rw.Wait()
			}
		}()
	}
	wg.Wait()
	p.Close(root)
	if err := p.Unmount("/mnt", 0); err != nil {
		t.Fatal(err)
	}
	e2fsckN(t, ramBytes(t, p, len(b)))
	t.Logf("%d opened, %d stale", opened.Load(), stale.Load())
}
