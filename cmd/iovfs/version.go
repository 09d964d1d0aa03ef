package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

const versionUsage = `usage: iovfs version
       iovfs --version

Prints the version of iovfs this binary was built from: the module
version ("(devel)" for a build from a checkout, a release or
pseudo-version for "go install ...@latest"), the VCS revision and its
time when the build recorded them (go build and go install in a git
checkout do; go run does not), and the Go toolchain.

options:
  -h, --help  show this help

examples:
  iovfs version
  go version -m $(command -v iovfs)   # every setting the build recorded
`

// runVersion is "iovfs version".
func runVersion(args []string, stdout, stderr io.Writer) int {
	c := &cli{name: "version", stdout: stdout, stderr: stderr}
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			fmt.Fprint(stdout, versionUsage)
			return 0
		}
	}
	if len(args) > 0 {
		if strings.HasPrefix(args[0], "-") {
			return c.usageError("unknown option %s", args[0])
		}
		return c.usageError("unexpected argument %q", args[0])
	}
	fmt.Fprintln(stdout, versionLine(debug.ReadBuildInfo()))
	return 0
}

// versionLine describes the build: "iovfs VERSION (revision REV, TIME,
// modified) GOVERSION GOOS/GOARCH".
func versionLine(bi *debug.BuildInfo, ok bool) string {
	goVersion := runtime.Version()
	if !ok {
		return fmt.Sprintf("iovfs (unknown: no build information) %s %s/%s", goVersion, runtime.GOOS, runtime.GOARCH)
	}
	if bi.GoVersion != "" {
		goVersion = bi.GoVersion
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var vcs []string
	switch {
	case rev != "":
		vcs = append(vcs, "revision "+rev)
		if at != "" {
			vcs = append(vcs, at)
		}
		if modified {
			vcs = append(vcs, "modified")
		}
	case version == "(devel)":
		vcs = append(vcs, "revision unknown: built without VCS information, as go run builds")
	}
	line := "iovfs " + version
	if len(vcs) > 0 {
		line += " (" + strings.Join(vcs, ", ") + ")"
	}
	return line + " " + goVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
}
