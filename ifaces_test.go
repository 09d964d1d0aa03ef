package iovfs_test

import (
	"go/ast"
	"go/token"
	"go/types"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestDriverInterfaces holds every type of the module to the vfs
// contract, which the VFS finds by type assertion: a method with the
// right name and the wrong signature would silently drop a capability.
//
//   - A driver type asserts every vfs interface it implements at compile time,
//     with var _ vfs.X = (*T)(nil) (or T{} for a value type), in its own
//     package, so the capability is written down where the type is.
//   - A driver type (one that asserts a vfs interface, or implements a
//     node's, a directory's, a file system's or a handle's) has no method
//     named like a vfs interface method with another signature.
func TestDriverInterfaces(t *testing.T) {
	if testing.Short() {
		t.Skip("loads and type-checks every package of the module")
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesInfo}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	var vfsPkg *types.Package
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("%s: %v", p.PkgPath, e)
		}
		if p.PkgPath == vfsPath {
			vfsPkg = p.Types
		}
	}
	if vfsPkg == nil {
		t.Fatal("package vfs not loaded")
	}
	ifaces := vfsInterfaces(vfsPkg)
	methods := map[string][]*types.Func{} // method name -> the interface methods of that name
	for _, in := range ifaces {
		for i := range in.iface.NumMethods() {
			m := in.iface.Method(i)
			methods[m.Name()] = append(methods[m.Name()], m)
		}
	}
	checked := 0
	for _, p := range pkgs {
		asserted := assertions(p)
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			tn, ok := scope.Lookup(name).(*types.TypeName)
			if !ok || tn.IsAlias() {
				continue
			}
			named, ok := tn.Type().(*types.Named)
			if !ok || types.IsInterface(named) {
				continue
			}
			if p.PkgPath == vfsPath && tn.Exported() {
				continue // vfs's own API (File, Backing), not a driver's type
			}
			ptr := types.NewPointer(named)
			var implemented []string
			driver := len(asserted[named]) > 0
			for _, in := range ifaces {
				if types.Implements(ptr, in.iface) {
					implemented = append(implemented, in.name)
					driver = driver || coreIfaces[in.name]
				}
			}
			if !driver {
				continue
			}
			checked++
			for _, in := range implemented {
				if !asserted[named][in] && !impliedBy(in, asserted[named], ifaces) {
					t.Errorf("%s.%s implements vfs.%s but does not assert it: add var _ vfs.%s = (*%s)(nil)",
						p.PkgPath, name, in, in, name)
				}
			}
			ms := types.NewMethodSet(ptr)
			for i := range ms.Len() {
				f := ms.At(i).Obj().(*types.Func)
				want := methods[f.Name()]
				if len(want) == 0 {
					continue
				}
				sig := f.Type().(*types.Signature)
				match := false
				for _, w := range want {
					if types.Identical(stripRecv(sig), stripRecv(w.Type().(*types.Signature))) {
						match = true
					}
				}
				if !match {
					t.Errorf("%s.%s has method %s%s, which no vfs interface's %s matches (want %s)",
						p.PkgPath, name, f.Name(), strings.TrimPrefix(types.TypeString(stripRecv(sig), nil), "func"),
						f.Name(), strings.TrimPrefix(types.TypeString(stripRecv(want[0].Type().(*types.Signature)), nil), "func"))
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d types implement vfs interfaces: the scan is broken", checked)
	}
}

const vfsPath = "github.com/iovfs/iovfs/vfs"

// coreIfaces are the interfaces that make a type a driver's: a node, a
// file system, a directory or a handle. A type that implements only such
// small interfaces as Syncer or Releaser by its method names (ext4's
// Writer has Sync) is no driver type unless it asserts one.
var coreIfaces = map[string]bool{
	"Node": true, "FileSystem": true, "Lookuper": true, "Opener": true, "DirReader": true, "DirIterator": true,
	"Reader": true, "IterReader": true, "Writer": true, "IterWriter": true, "Ioctler": true, "Poller": true,
}

type namedIface struct {
	name  string
	iface *types.Interface
}

// vfsInterfaces returns vfs's exported interfaces that have methods.
func vfsInterfaces(p *types.Package) []namedIface {
	var out []namedIface
	for _, name := range p.Scope().Names() {
		tn, ok := p.Scope().Lookup(name).(*types.TypeName)
		if !ok || !tn.Exported() {
			continue
		}
		in, ok := tn.Type().Underlying().(*types.Interface)
		if !ok || in.NumMethods() == 0 {
			continue
		}
		out = append(out, namedIface{name, in})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// assertions returns, for each named type of p, the vfs interfaces that
// a blank var declaration of p asserts it implements.
func assertions(p *packages.Package) map[*types.Named]map[string]bool {
	out := map[*types.Named]map[string]bool{}
	for _, f := range p.Syntax {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if vs.Type == nil || len(vs.Names) != len(vs.Values) {
					continue
				}
				it := p.TypesInfo.TypeOf(vs.Type)
				named, ok := it.(*types.Named)
				if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != vfsPath {
					continue
				}
				for i, n := range vs.Names {
					if n.Name != "_" {
						continue
					}
					vt := p.TypesInfo.TypeOf(vs.Values[i])
					if ptr, ok := vt.(*types.Pointer); ok {
						vt = ptr.Elem()
					}
					if vn, ok := vt.(*types.Named); ok {
						if out[vn] == nil {
							out[vn] = map[string]bool{}
						}
						out[vn][named.Obj().Name()] = true
					}
				}
			}
		}
	}
	return out
}

// impliedBy reports whether asserting one of the interfaces in asserted
// asserts in too (an interface that embeds it).
func impliedBy(in string, asserted map[string]bool, ifaces []namedIface) bool {
	var target *types.Interface
	for _, x := range ifaces {
		if x.name == in {
			target = x.iface
		}
	}
	for _, x := range ifaces {
		if asserted[x.name] && x.name != in && types.Implements(types.NewInterfaceType(nil, []types.Type{x.iface}).Complete(), target) {
			return true
		}
	}
	return false
}

func stripRecv(s *types.Signature) *types.Signature {
	return types.NewSignatureType(nil, nil, nil, s.Params(), s.Results(), s.Variadic())
}
