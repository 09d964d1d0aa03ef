// Command iovfs drives the iovfs in-process file system and device-driver
// layer from the shell. Its main use today is "iovfs bench", which runs the
// reference experiments; "iovfs --help" lists every subcommand.
package main

import (
	"fmt"
	"io"
	"os"
)

// A command is one subcommand of iovfs.
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands, in help order.
var commands = []command{
	{"bench", "run the reference experiments: same-run A/B benchmarks of the read paths (iovfs bench --help)", runBench},
	{"mount", "export a tmpfs, ext4 image, host directory or devfs to the host through FUSE (iovfs mount --help)", runMount},
	{"sh", "a POSIX shell inside the process, on an iovfs namespace (iovfs sh --help)", runSh},
	{"ls", "list a directory of an image (ext2/3/4, FAT): iovfs ls [-l -R] IMAGE[@PART][:PATH]", imageTool("ls")},
	{"cat", "print a file of an image: iovfs cat IMAGE[@PART]:PATH", imageTool("cat")},
	{"stat", "show a file's status in an image: iovfs stat IMAGE[@PART]:PATH", imageTool("stat")},
	{"tree", "print an image's tree: iovfs tree IMAGE[@PART][:PATH]", imageTool("tree")},
	{"cp", "copy between the host and images, as GNU cp (iovfs cp --help)", runCp},
	{"parts", "print an image's partition table as sfdisk -l: iovfs parts IMAGE", runParts},
	{"mkdir", "make directories in an image: iovfs mkdir [-p] IMAGE[@PART]:DIR...", editCommand("mkdir")},
	{"rm", "remove files from an image: iovfs rm [-r] [-f] IMAGE[@PART]:PATH...", editCommand("rm")},
	{"mv", "move files within an image: iovfs mv IMAGE[@PART]:SRC... IMAGE[@PART]:DEST", editCommand("mv")},
	{"ln", "link in an image: iovfs ln [-s] TARGET IMAGE[@PART]:LINK", editCommand("ln")},
	{"chmod", "set modes in an image: iovfs chmod MODE IMAGE[@PART]:PATH...", editCommand("chmod")},
	{"chown", "set owners in an image: iovfs chown UID[:GID] IMAGE[@PART]:PATH...", editCommand("chown")},
	{"touch", "touch files in an image: iovfs touch IMAGE[@PART]:PATH...", editCommand("touch")},
	{"run", "run a WebAssembly (wasip1) program on an iovfs process, like wazero run (iovfs run --help)", runRun},
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
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			// "iovfs help bench" is "iovfs bench --help".
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "iovfs: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: iovfs <command> [arguments]\n\n")
	fmt.Fprintf(w, "iovfs is a file system and device-driver layer that runs inside a Go process.\n\n")
	fmt.Fprintf(w, "commands:\n")
	width := len("help")
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-*s  %s\n", width, "help", "show this list, or a command's help (iovfs help bench)")
}
