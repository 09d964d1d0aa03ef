package vfs

// openPath returns the handle of an O_PATH file of n: pathHandle, or a
// pathHold when the driver holds its nodes for O_PATH files (PathOpener).
func openPath(n Node) (Handle, error) {
	po, ok := n.(PathOpener)
	if !ok {
		return pathHandle{}, nil
	}
	r, err := po.OpenPath()
	if err != nil {
		return nil, err
	}
	return pathHold{r}, nil
}

// pathHold is the handle of an O_PATH file whose driver holds the node: a
// Releaser and nothing else, so that every call needing a driver method
// fails as it does on pathHandle.
type pathHold struct{ r Releaser }

func (h pathHold) Release() error { return h.r.Release() }
