package hostfs

// ForceFallback makes New use the openat(O_PATH|O_NOFOLLOW) walk, as on a
// kernel without openat2, while on is true.
func ForceFallback(on bool) { forceFallback.Store(on) }
