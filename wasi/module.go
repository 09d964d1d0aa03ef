package wasi

import (
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// export puts wazero's own wasi_snapshot_preview1 functions in b, then
// replaces every fd_*, path_* function, poll_oneoff and sock_shutdown with
// this instance's (a later export of a name replaces an earlier one).
func (w *instance) export(b wazero.HostModuleBuilder) {
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	fn := func(name string, f api.GoModuleFunc, params ...api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(f, params, []api.ValueType{i32}).
			WithResultNames("errno").Export(name)
	}
	fn("fd_advise", w.fdAdvise, i32, i64, i64, i32)
	fn("fd_allocate", w.fdAllocate, i32, i64, i64)
	fn("fd_close", w.fdClose, i32)
	fn("fd_datasync", w.fdDatasync, i32)
	fn("fd_fdstat_get", w.fdFdstatGet, i32, i32)
	fn("fd_fdstat_set_flags", w.fdFdstatSetFlags, i32, i32)
	fn("fd_fdstat_set_rights", w.fdFdstatSetRights, i32, i64, i64)
	fn("fd_filestat_get", w.fdFilestatGet, i32, i32)
	fn("fd_filestat_set_size", w.fdFilestatSetSize, i32, i64)
	fn("fd_filestat_set_times", w.fdFilestatSetTimes, i32, i64, i64, i32)
	fn("fd_pread", w.fdPread, i32, i32, i32, i64, i32)
	fn("fd_prestat_get", w.fdPrestatGet, i32, i32)
	fn("fd_prestat_dir_name", w.fdPrestatDirName, i32, i32, i32)
	fn("fd_pwrite", w.fdPwrite, i32, i32, i32, i64, i32)
	fn("fd_read", w.fdRead, i32, i32, i32, i32)
	fn("fd_readdir", w.fdReaddir, i32, i32, i32, i64, i32)
	fn("fd_renumber", w.fdRenumber, i32, i32)
	fn("fd_seek", w.fdSeek, i32, i64, i32, i32)
	fn("fd_sync", w.fdSync, i32)
	fn("fd_tell", w.fdTell, i32, i32)
	fn("fd_write", w.fdWrite, i32, i32, i32, i32)
	fn("path_create_directory", w.pathCreateDirectory, i32, i32, i32)
	fn("path_filestat_get", w.pathFilestatGet, i32, i32, i32, i32, i32)
	fn("path_filestat_set_times", w.pathFilestatSetTimes, i32, i32, i32, i32, i64, i64, i32)
	fn("path_link", w.pathLink, i32, i32, i32, i32, i32, i32, i32)
	fn("path_open", w.pathOpen, i32, i32, i32, i32, i32, i64, i64, i32, i32)
	fn("path_readlink", w.pathReadlink, i32, i32, i32, i32, i32, i32)
	fn("path_remove_directory", w.pathRemoveDirectory, i32, i32, i32)
	fn("path_rename", w.pathRename, i32, i32, i32, i32, i32, i32)
	fn("path_symlink", w.pathSymlink, i32, i32, i32, i32, i32)
	fn("path_unlink_file", w.pathUnlinkFile, i32, i32, i32)
	fn("poll_oneoff", w.pollOneoff, i32, i32, i32, i32)
	fn("sock_shutdown", w.sockShutdown, i32, i32)
}
