package wasi

// WASI rights (wasi_snapshot_preview1 "rights"), one bit each in the
// spec's order. A descriptor's base rights say which calls it may make;
// its inheriting rights bound the base rights of what path_open opens
// through it.
const (
	rightFdDatasync uint64 = 1 << iota
	rightFdRead
	rightFdSeek
	rightFdFdstatSetFlags
	rightFdSync
	rightFdTell
	rightFdWrite
	rightFdAdvise
	rightFdAllocate
	rightPathCreateDirectory
	rightPathCreateFile
	rightPathLinkSource
	rightPathLinkTarget
	rightPathOpen
	rightFdReaddir
	rightPathReadlink
	rightPathRenameSource
	rightPathRenameTarget
	rightPathFilestatGet
	rightPathFilestatSetSize
	rightPathFilestatSetTimes
	rightFdFilestatGet
	rightFdFilestatSetSize
	rightFdFilestatSetTimes
	rightPathSymlink
	rightPathRemoveDirectory
	rightPathUnlinkFile
	rightPollFdReadwrite
	rightSockShutdown
	rightSockAccept

	allRights = rightSockAccept<<1 - 1
)

// fileRights are the rights a non-directory can use.
const fileRights = rightFdDatasync | rightFdRead | rightFdSeek | rightFdFdstatSetFlags |
	rightFdSync | rightFdTell | rightFdWrite | rightFdAdvise | rightFdAllocate |
	rightFdFilestatGet | rightFdFilestatSetSize | rightFdFilestatSetTimes | rightPollFdReadwrite

// dirRights are the rights a directory can use. fd_seek and fd_tell are
// not: WASI lists a directory with fd_readdir's cookies, never an offset,
// and a directory's fdstat must not offer them (wasi-testsuite's
// directory_seek; Go's wasip1 runtime rewinds a directory by resetting
// its cookie, without fd_seek). fd_read is, because read(2) of a
// directory is Linux's to answer (EISDIR), not a missing right.
const dirRights = rightFdDatasync | rightFdRead | rightFdFdstatSetFlags | rightFdSync |
	rightPathCreateDirectory | rightPathCreateFile | rightPathLinkSource | rightPathLinkTarget |
	rightPathOpen | rightFdReaddir | rightPathReadlink | rightPathRenameSource |
	rightPathRenameTarget | rightPathFilestatGet | rightPathFilestatSetSize |
	rightPathFilestatSetTimes | rightFdFilestatGet | rightFdFilestatSetTimes |
	rightPathSymlink | rightPathRemoveDirectory | rightPathUnlinkFile
