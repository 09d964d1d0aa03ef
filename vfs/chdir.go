package vfs

import "strings"

// Chdir makes path the current directory, as chdir(2) does: a
// non-directory gives ENOTDIR, a directory the caller may not search
// EACCES.
func (p *Proc) Chdir(path string) error {
	loc, err := p.walk(path, true)
	if err == nil {
		err = p.chdirLoc(loc)
	}
	return pathErr("chdir", path, err)
}

// Fchdir makes the directory open as fd (O_PATH descriptors included) the
// current directory, as fchdir(2) does.
func (p *Proc) Fchdir(fd int) error {
	f := p.files.get(fd)
	if f == nil {
		return errEBADF
	}
	if f.loc.mnt == nil {
		return errENOTDIR
	}
	return p.chdirLoc(f.loc)
}

// chdirLoc is set_fs_pwd after chdir's checks: ENOTDIR, then search
// permission.
func (p *Proc) chdirLoc(loc location) error {
	if err := mustDir(loc.node); err != nil {
		return err
	}
	if err := p.cred.Load().mayLookup(loc); err != nil {
		return err
	}
	p.cwd.Store(&loc)
	return nil
}

// Getcwd returns the absolute path of the current directory, as getcwd(2)
// does. A directory that has been removed gives ENOENT.
func (p *Proc) Getcwd() (string, error) {
	return p.pathOf(*p.cwd.Load())
}

// pathOf returns the absolute path of loc in p's namespace, by the names
// under which each parent holds it; a location that is no longer linked
// gives ENOENT.
func (p *Proc) pathOf(loc location) (string, error) {
	var parts []string
	for {
		if loc.node == loc.mnt.root {
			if loc.mnt.parent == nil {
				break
			}
			if !loc.mnt.attached() {
				return "", errENOENT
			}
			loc = location{loc.mnt.parent, loc.mnt.point}
			continue
		}
		up := p.ns.parentOf(loc)
		name, err := nameIn(up.node, loc.node)
		if err != nil {
			return "", err
		}
		parts = append(parts, name)
		loc = up
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return "/" + strings.Join(parts, "/"), nil
}

// nameIn finds the name under which dir holds child.
func nameIn(dir, child Node) (string, error) {
	rd, ok := dir.(DirReader)
	if !ok {
		return "", errENOENT
	}
	want, err := child.Stat()
	if err != nil {
		return "", err
	}
	lk, ok := dir.(Lookuper)
	if !ok {
		return "", errENOENT
	}
	// The names with child's inode number are looked up after the
	// listing: ReadDir may hold the file system's locks while it calls
	// its function (DirReader), which must not call back into it.
	var names []string
	err = rd.ReadDir(0, func(d Dirent) bool {
		if d.Ino == want.Ino {
			names = append(names, d.Name)
		}
		return true
	})
	if err != nil {
		return "", err
	}
	for _, name := range names {
		if n, err := lk.Lookup(name); err == nil && n == child {
			return name, nil
		}
	}
	return "", errENOENT
}
