package wasi

// One wasi module for many guests, each on a process of its own: a shell
// starts programs concurrently from one wazero runtime (one compiled
// module cache), and each program's calls must reach its own process.
// The functions find the process in the context the guest was
// instantiated with, which wazero passes to every host call the guest
// makes.

import (
	"context"
	"errors"

	"github.com/iovfs/iovfs/vfs"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

type instanceKey struct{}

// write makes a write call, and ends the guest with 128+13 when it
// failed with EPIPE and the guest has SigPipe, as proc_exit ends it.
func (w *instance) write(fn func(*instance, context.Context, api.Module, []uint64), ctx context.Context, mod api.Module, stack []uint64) {
	fn(w, ctx, mod, stack)
	if w.sigpipe && uint32(stack[0]) == errnoPipe {
		const code = 128 + 13
		mod.CloseWithExitCode(ctx, code)
		panic(sys.NewExitError(code))
	}
}

// InstantiateShared instantiates the module wasi_snapshot_preview1 in r,
// bound to no process: each guest instantiated in r afterwards runs on
// the process that Bind put in the context given to InstantiateModule.
// A call from a guest whose context has none gives ENOSYS. A call from a
// guest whose context is done ends the guest with
// sys.ExitCodeContextCanceled (or DeadlineExceeded), as a signal is
// taken at a system call: a runtime without CloseOnContextDone stops a
// guest no other way. r must not already hold a module called
// wasi_snapshot_preview1.
func InstantiateShared(ctx context.Context, r wazero.Runtime) (api.Closer, error) {
	b := r.NewHostModuleBuilder(ModuleName)
	exportFuncs(b, func(f hostFunc) api.GoModuleFunc {
		fn, writes := f.fn, f.writes
		return func(ctx context.Context, mod api.Module, stack []uint64) {
			w, ok := ctx.Value(instanceKey{}).(*instance)
			if ok {
				select {
				case <-w.done:
					code := sys.ExitCodeContextCanceled
					if errors.Is(ctx.Err(), context.DeadlineExceeded) {
						code = sys.ExitCodeDeadlineExceeded
					}
					mod.CloseWithExitCode(ctx, code)
					panic(sys.NewExitError(code))
				default:
				}
			}
			switch {
			case !ok:
				stack[0] = uint64(errnoNosys)
			case writes:
				w.write(fn, ctx, mod, stack)
			default:
				fn(w, ctx, mod, stack)
			}
		}
	})
	return b.Instantiate(ctx)
}

// Bind opens cfg's preopens in p, as Instantiate does, and returns a
// context that makes a guest of a shared module (InstantiateShared) run
// on p: pass it to InstantiateModule. Descriptors the guest opens, and
// the preopens, stay in p after the guest exits.
func Bind(ctx context.Context, p *vfs.Proc, cfg Config) (context.Context, error) {
	w, err := newInstance(p, cfg)
	if err != nil {
		return nil, err
	}
	w.done = ctx.Done()
	return context.WithValue(ctx, instanceKey{}, w), nil
}
