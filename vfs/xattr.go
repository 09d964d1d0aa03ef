package vfs

import "golang.org/x/sys/unix"

// Getxattr returns the value of the extended attribute name of the file at
// path, following symlinks, as getxattr(2) does. A missing attribute gives
// ENODATA; a file system without extended attributes gives EOPNOTSUPP.
func (p *Proc) Getxattr(path, name string) ([]byte, error) {
	if name == "" || len(name) > 255 {
		return nil, pathErr("getxattr", path, unix.ERANGE)
	}
	loc, err := p.walk(path, true)
	if err != nil {
		return nil, pathErr("getxattr", path, err)
	}
	x, ok := loc.node.(Xattrer)
	if !ok {
		return nil, pathErr("getxattr", path, errEOPNOTSUP)
	}
	v, err := x.Getxattr(name)
	if err != nil {
		return nil, pathErr("getxattr", path, err)
	}
	return v, nil
}

// Listxattr returns the names of the extended attributes of the file at
// path, following symlinks, as listxattr(2) does. A file system without
// extended attributes reports none.
func (p *Proc) Listxattr(path string) ([]string, error) {
	loc, err := p.walk(path, true)
	if err != nil {
		return nil, pathErr("listxattr", path, err)
	}
	x, ok := loc.node.(Xattrer)
	if !ok {
		return nil, nil
	}
	names, err := x.Listxattr()
	if err != nil {
		return nil, pathErr("listxattr", path, err)
	}
	return names, nil
}
