// Command iovfs drives the iovfs in-process file system and device-driver
// layer from the shell: benchmarks, a FUSE export, WebAssembly programs, a
// shell on an iovfs namespace, and tools that read ext2/3/4 images without
// root. "iovfs --help" lists the commands; "iovfs CMD --help" explains one.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// A command is one subcommand of iovfs.
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands, in help order.
var commands = []command{
	{"bench", "run the benchmarks: a quick suite by default, every experiment with --full", runBench},
	{"mount", "export a tmpfs, an image (ext2/3/4, FAT), a host directory or devfs through FUSE", runMount},
	{"run", "run a WebAssembly (wasip1) program with its files on iovfs, like wazero run", runRun},
	{"sh", "a POSIX shell inside the process, on an iovfs namespace", runSh},
	{"ls", "list a directory of a disk image (ext2/3/4, FAT)", imageTool("ls")},
	{"cat", "print a file of a disk image", imageTool("cat")},
	{"stat", "show the status of a file in a disk image", imageTool("stat")},
	{"tree", "print the tree of a disk image", imageTool("tree")},
	{"cp", "copy between the host and disk images, as GNU cp", runCp},
	{"parts", "print the partition table of a disk image, as sfdisk -l", runParts},
	{"mkdir", "make directories in a disk image", editCommand("mkdir")},
	{"rm", "remove files from a disk image", editCommand("rm")},
	{"mv", "move files within a disk image", editCommand("mv")},
	{"ln", "make links in a disk image", editCommand("ln")},
	{"chmod", "set permission bits in a disk image", editCommand("chmod")},
	{"chown", "set owners in a disk image", editCommand("chown")},
	{"touch", "set times of, or create, files in a disk image", editCommand("touch")},
	{"version", "print the version of this binary", runVersion},
}

func init() {
	// Here, not in the list: runHelp looks the commands up.
	commands = append(commands, command{"help", "show this list, or a command's help (iovfs help bench)", runHelp})
}

func imageTool(name string) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		return runImageTool(name, args, stdout, stderr)
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs iovfs with args and returns the exit status: 0 for success, 1
// for a failure, 2 for a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintf(stderr, "iovfs: missing command\nTry 'iovfs --help'.\n")
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "--version", "-version", "-v":
		return runVersion(args[1:], stdout, stderr)
	}
	for _, cmd := range commands {
		if cmd.name == args[0] {
			// The drivers' notices and the images' notes are the
			// command's warnings.
			c := &cli{name: cmd.name, stdout: stdout, stderr: stderr}
			prevCLI, prevSink := noteCLI, sink
			var unwatch func()
			procs := len(devfsOf)
			noteCLI = c
			sink, unwatch = watchNotices(c)
			defer func() {
				unwatch()
				noteCLI, sink = prevCLI, prevSink
				// The command's processes go with it: a program (or a
				// test) that runs commands one after another would
				// otherwise keep every namespace they made.
				if procs == 0 {
					clear(devfsOf)
				}
			}()
			return cmd.run(args[1:], stdout, stderr)
		}
	}
	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "iovfs: unknown option %s\nTry 'iovfs --help'.\n", args[0])
	} else {
		fmt.Fprintf(stderr, "iovfs: unknown command %q\nTry 'iovfs --help'.\n", args[0])
	}
	return 2
}

// runHelp is "iovfs help [CMD]".
func runHelp(args []string, stdout, stderr io.Writer) int {
	c := &cli{name: "help", stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		usage(stdout)
		return 0
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, helpUsage)
		return 0
	}
	if len(args) > 1 {
		return c.usageError("one command at a time, not %d", len(args))
	}
	for _, cmd := range commands {
		if cmd.name == args[0] {
			return cmd.run([]string{"--help"}, stdout, stderr)
		}
	}
	return c.usageError("unknown command %q", args[0])
}

const helpUsage = `usage: iovfs help [COMMAND]

Without a command, lists the commands; with one, prints its help, as
"iovfs COMMAND --help" does.

options:
  -h, --help  show this help

examples:
  iovfs help
  iovfs help bench
`

func usage(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("usage: iovfs COMMAND [ARGUMENTS]\n\n")
	p("iovfs is a file system and device-driver layer that runs inside a Go process:\n")
	p("Linux's file semantics for Go programs, and these commands to try it.\n\n")
	p("commands:\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		p("  %-*s  %s\n", width, c.name, c.summary)
	}
	p("\noptions:\n")
	p("  -h, --help     show this list\n")
	p("  -v, --version  print the version (as iovfs version)\n")
	p("\nexamples:\n")
	p("  iovfs bench                          # the quick benchmark suite, about a minute\n")
	p("  iovfs ls -l disk.img:/etc            # list a directory inside an ext4 image\n")
	p("  iovfs sh -c 'mkrd 8192; ls -l /dev'  # a shell on an in-process namespace\n")
	p("\n\"iovfs COMMAND --help\" explains a command. Documentation: https://github.com/iovfs/iovfs\n")
}
