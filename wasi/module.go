package wasi

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// hostFunc is one function this package serves in place of wazero's: a
// method of the instance, with its parameter types (the result is the
// errno).
type hostFunc struct {
	name   string
	fn     func(*instance, context.Context, api.Module, []uint64)
	params []api.ValueType
	writes bool // a write that may end the guest (Config.SigPipe)
}

// hostFuncs are every fd_* and path_* function, poll_oneoff and
// sock_shutdown.
var hostFuncs = []hostFunc{
	{"fd_advise", (*instance).fdAdvise, []api.ValueType{i32, i64, i64, i32}, false},
	{"fd_allocate", (*instance).fdAllocate, []api.ValueType{i32, i64, i64}, false},
	{"fd_close", (*instance).fdClose, []api.ValueType{i32}, false},
	{"fd_datasync", (*instance).fdDatasync, []api.ValueType{i32}, false},
	{"fd_fdstat_get", (*instance).fdFdstatGet, []api.ValueType{i32, i32}, false},
	{"fd_fdstat_set_flags", (*instance).fdFdstatSetFlags, []api.ValueType{i32, i32}, false},
	{"fd_fdstat_set_rights", (*instance).fdFdstatSetRights, []api.ValueType{i32, i64, i64}, false},
	{"fd_filestat_get", (*instance).fdFilestatGet, []api.ValueType{i32, i32}, false},
	{"fd_filestat_set_size", (*instance).fdFilestatSetSize, []api.ValueType{i32, i64}, false},
	{"fd_filestat_set_times", (*instance).fdFilestatSetTimes, []api.ValueType{i32, i64, i64, i32}, false},
	{"fd_pread", (*instance).fdPread, []api.ValueType{i32, i32, i32, i64, i32}, false},
	{"fd_prestat_get", (*instance).fdPrestatGet, []api.ValueType{i32, i32}, false},
	{"fd_prestat_dir_name", (*instance).fdPrestatDirName, []api.ValueType{i32, i32, i32}, false},
	{"fd_pwrite", (*instance).fdPwrite, []api.ValueType{i32, i32, i32, i64, i32}, true},
	{"fd_read", (*instance).fdRead, []api.ValueType{i32, i32, i32, i32}, false},
	{"fd_readdir", (*instance).fdReaddir, []api.ValueType{i32, i32, i32, i64, i32}, false},
	{"fd_renumber", (*instance).fdRenumber, []api.ValueType{i32, i32}, false},
	{"fd_seek", (*instance).fdSeek, []api.ValueType{i32, i64, i32, i32}, false},
	{"fd_sync", (*instance).fdSync, []api.ValueType{i32}, false},
	{"fd_tell", (*instance).fdTell, []api.ValueType{i32, i32}, false},
	{"fd_write", (*instance).fdWrite, []api.ValueType{i32, i32, i32, i32}, true},
	{"path_create_directory", (*instance).pathCreateDirectory, []api.ValueType{i32, i32, i32}, false},
	{"path_filestat_get", (*instance).pathFilestatGet, []api.ValueType{i32, i32, i32, i32, i32}, false},
	{"path_filestat_set_times", (*instance).pathFilestatSetTimes, []api.ValueType{i32, i32, i32, i32, i64, i64, i32}, false},
	{"path_link", (*instance).pathLink, []api.ValueType{i32, i32, i32, i32, i32, i32, i32}, false},
	{"path_open", (*instance).pathOpen, []api.ValueType{i32, i32, i32, i32, i32, i64, i64, i32, i32}, false},
	{"path_readlink", (*instance).pathReadlink, []api.ValueType{i32, i32, i32, i32, i32, i32}, false},
	{"path_remove_directory", (*instance).pathRemoveDirectory, []api.ValueType{i32, i32, i32}, false},
	{"path_rename", (*instance).pathRename, []api.ValueType{i32, i32, i32, i32, i32, i32}, false},
	{"path_symlink", (*instance).pathSymlink, []api.ValueType{i32, i32, i32, i32, i32}, false},
	{"path_unlink_file", (*instance).pathUnlinkFile, []api.ValueType{i32, i32, i32}, false},
	{"poll_oneoff", (*instance).pollOneoff, []api.ValueType{i32, i32, i32, i32}, false},
	{"sock_shutdown", (*instance).sockShutdown, []api.ValueType{i32, i32}, false},
}

// export puts wazero's own wasi_snapshot_preview1 functions in b, then
// replaces hostFuncs with this instance's (a later export of a name
// replaces an earlier one).
func (w *instance) export(b wazero.HostModuleBuilder) {
	exportFuncs(b, func(f hostFunc) api.GoModuleFunc {
		if f.writes {
			return func(ctx context.Context, mod api.Module, stack []uint64) { w.write(f.fn, ctx, mod, stack) }
		}
		fn := f.fn
		return func(ctx context.Context, mod api.Module, stack []uint64) { fn(w, ctx, mod, stack) }
	})
}

// exportFuncs exports wazero's functions and then hostFuncs, each made
// into a Go function by bind.
func exportFuncs(b wazero.HostModuleBuilder, bind func(hostFunc) api.GoModuleFunc) {
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	for _, f := range hostFuncs {
		b.NewFunctionBuilder().WithGoModuleFunction(bind(f), f.params, []api.ValueType{i32}).
			WithResultNames("errno").Export(f.name)
	}
}
