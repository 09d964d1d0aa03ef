// Package wasmgen assembles small WebAssembly modules in Go, for tests and
// benchmarks that need a guest without a wasm toolchain (wazero v1.12 has
// no text-format support). A module built here imports host functions,
// exports its memory as "memory", and exports, for each import, a wrapper
// of the same name and type that calls it; it can also export loops that
// call a fixed sequence of imports with constant arguments n times, so a
// benchmark measures the guest-to-host call and not Go-to-guest entry.
package wasmgen

import "github.com/tetratelabs/wazero/api"

// An Import is a function the module imports.
type Import struct {
	Module, Name    string
	Params, Results []api.ValueType
}

// A Call is one call in a loop body: the import's index in the module's
// import list and its arguments, as constants (i32 or i64 by the
// import's parameter types).
type Call struct {
	Import int
	Args   []uint64
}

// A Loop is an exported function loop(n i32) -> i32 that runs Calls in
// order n times. It stops early when a call whose result is an i32
// returns non-zero (a WASI errno) and returns that value; otherwise it
// returns 0.
type Loop struct {
	Name  string
	Calls []Call
}

// Module returns the binary of a module with a memory of pages 64 KiB
// pages, the imports with a wrapper each, and the loops.
func Module(pages uint32, imports []Import, loops []Loop) []byte {
	var b []byte
	b = append(b, 0, 'a', 's', 'm', 1, 0, 0, 0)

	// Types: one per import, then loop's (i32) -> i32.
	var types []byte
	types = uleb(types, uint64(len(imports)+1))
	for _, im := range imports {
		types = funcType(types, im.Params, im.Results)
	}
	types = funcType(types, []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32})
	b = section(b, 1, types)

	var imps []byte
	imps = uleb(imps, uint64(len(imports)))
	for i, im := range imports {
		imps = name(imps, im.Module)
		imps = name(imps, im.Name)
		imps = append(imps, 0) // func
		imps = uleb(imps, uint64(i))
	}
	b = section(b, 2, imps)

	// Functions: wrappers (type i), loops (type len(imports)).
	nf := len(imports) + len(loops)
	var funcs []byte
	funcs = uleb(funcs, uint64(nf))
	for i := range imports {
		funcs = uleb(funcs, uint64(i))
	}
	for range loops {
		funcs = uleb(funcs, uint64(len(imports)))
	}
	b = section(b, 3, funcs)

	var mem []byte
	mem = append(mem, 1, 0)
	mem = uleb(mem, uint64(pages))
	b = section(b, 5, mem)

	var exps []byte
	exps = uleb(exps, uint64(1+nf))
	exps = name(exps, "memory")
	exps = append(exps, 2, 0)
	for i, im := range imports {
		exps = name(exps, im.Name)
		exps = append(exps, 0)
		exps = uleb(exps, uint64(len(imports)+i))
	}
	for i, l := range loops {
		exps = name(exps, l.Name)
		exps = append(exps, 0)
		exps = uleb(exps, uint64(2*len(imports)+i))
	}
	b = section(b, 7, exps)

	var code []byte
	code = uleb(code, uint64(nf))
	for i, im := range imports {
		var body []byte
		body = append(body, 0) // no locals
		for p := range im.Params {
			body = append(body, 0x20) // local.get
			body = uleb(body, uint64(p))
		}
		body = append(body, 0x10) // call
		body = uleb(body, uint64(i))
		body = append(body, 0x0b)
		code = uleb(code, uint64(len(body)))
		code = append(code, body...)
	}
	for _, l := range loops {
		body := loopBody(imports, l)
		code = uleb(code, uint64(len(body)))
		code = append(code, body...)
	}
	return section(b, 10, code)
}

// loopBody is:
//
//	(local $r i32)
//	block loop
//	  local.get 0 i32.eqz br_if 1
//	  <args> call k [local.tee 1 br_if 1 | drop...]   for each call
//	  local.get 0 i32.const 1 i32.sub local.set 0 br 0
//	end end
//	local.get 1
func loopBody(imports []Import, l Loop) []byte {
	body := []byte{1, 1, api.ValueTypeI32} // one local of type i32
	body = append(body, 0x02, 0x40, 0x03, 0x40)
	body = append(body, 0x20, 0, 0x45, 0x0d, 1)
	for _, c := range l.Calls {
		im := imports[c.Import]
		for i, a := range c.Args {
			if im.Params[i] == api.ValueTypeI64 {
				body = append(body, 0x42)
				body = sleb(body, int64(a))
			} else {
				body = append(body, 0x41)
				body = sleb(body, int64(int32(uint32(a))))
			}
		}
		body = append(body, 0x10)
		body = uleb(body, uint64(c.Import))
		for j, r := range im.Results {
			if j == 0 && r == api.ValueTypeI32 && len(im.Results) == 1 {
				body = append(body, 0x22, 1, 0x0d, 1) // local.tee 1, br_if 1
			} else {
				body = append(body, 0x1a) // drop
			}
		}
	}
	body = append(body, 0x20, 0, 0x41, 1, 0x6b, 0x21, 0, 0x0c, 0)
	body = append(body, 0x0b, 0x0b, 0x20, 1, 0x0b)
	return body
}

func funcType(b []byte, params, results []api.ValueType) []byte {
	b = append(b, 0x60)
	b = uleb(b, uint64(len(params)))
	b = append(b, params...)
	b = uleb(b, uint64(len(results)))
	return append(b, results...)
}

func section(b []byte, id byte, content []byte) []byte {
	b = append(b, id)
	b = uleb(b, uint64(len(content)))
	return append(b, content...)
}

func name(b []byte, s string) []byte {
	b = uleb(b, uint64(len(s)))
	return append(b, s...)
}

func uleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func sleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// WASI lists the wasi_snapshot_preview1 functions tests and benchmarks
// call, with their signatures, by name.
var WASI = map[string]Import{}

func init() {
	const i32, i64 = api.ValueTypeI32, api.ValueTypeI64
	for _, f := range []struct {
		name   string
		params []api.ValueType
	}{
		{"fd_read", []api.ValueType{i32, i32, i32, i32}},
		{"fd_write", []api.ValueType{i32, i32, i32, i32}},
		{"fd_pread", []api.ValueType{i32, i32, i32, i64, i32}},
		{"fd_pwrite", []api.ValueType{i32, i32, i32, i64, i32}},
		{"fd_seek", []api.ValueType{i32, i64, i32, i32}},
		{"fd_close", []api.ValueType{i32}},
		{"path_open", []api.ValueType{i32, i32, i32, i32, i32, i64, i64, i32, i32}},
		{"path_create_directory", []api.ValueType{i32, i32, i32}},
		{"path_filestat_get", []api.ValueType{i32, i32, i32, i32, i32}},
		{"path_unlink_file", []api.ValueType{i32, i32, i32}},
		{"path_symlink", []api.ValueType{i32, i32, i32, i32, i32}},
		{"fd_readdir", []api.ValueType{i32, i32, i32, i64, i32}},
		{"fd_prestat_get", []api.ValueType{i32, i32}},
		{"fd_prestat_dir_name", []api.ValueType{i32, i32, i32}},
		{"fd_fdstat_get", []api.ValueType{i32, i32}},
		{"poll_oneoff", []api.ValueType{i32, i32, i32, i32}},
		{"fd_renumber", []api.ValueType{i32, i32}},
		{"fd_fdstat_set_flags", []api.ValueType{i32, i32}},
		{"fd_allocate", []api.ValueType{i32, i64, i64}},
		{"fd_filestat_get", []api.ValueType{i32, i32}},
		{"fd_tell", []api.ValueType{i32, i32}},
		{"fd_fdstat_set_rights", []api.ValueType{i32, i64, i64}},
		{"sock_shutdown", []api.ValueType{i32, i32}},
	} {
		WASI[f.name] = Import{Module: "wasi_snapshot_preview1", Name: f.name, Params: f.params, Results: []api.ValueType{i32}}
	}
}

// Imports returns the WASI imports named, in order.
func Imports(names ...string) []Import {
	out := make([]Import, len(names))
	for i, n := range names {
		im, ok := WASI[n]
		if !ok {
			panic("wasmgen: unknown WASI function " + n)
		}
		out[i] = im
	}
	return out
}
