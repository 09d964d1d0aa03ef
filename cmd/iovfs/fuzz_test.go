package main

import (
	"strings"
	"testing"
)

// FuzzCommandLine parses arbitrary command lines (NUL-separated: the
// command, then its arguments) with each command's parser, which does
// nothing else: whatever the input, a parser returns its result or an
// error whose message is one non-empty line, and never panics.
func FuzzCommandLine(f *testing.F) {
	for _, s := range [][]string{
		{"bench"}, {"bench", "--loops", "0"}, {"bench", "zero", "--size", "-1", "dax"}, {"bench", "all", "--full"},
		{"bench", "--markdown", "--format=markdown"}, {"bench", "matrix", "--segments", "1,,2", "--sizes", "9999999999999G"},
		{"bench", "walk", "--dirs=99999999999999999999"}, {"bench", "dax", "--file-size", "-1K"}, {"bench", "--loops=", "x"},
		{"bench", "-", "--", "zero"}, {"bench", "--variants", ",,,"}, {"bench", "--clock"},
		{"mount", "-t", "tmpfs", "-o", "", "none", "/x"}, {"mount", "-t=ext4", "a", "b", "c"}, {"mount", "--debug=maybe"},
		{"run", "--tmpfs", "/t:size=1m", "p.wasm", "--", "-x"}, {"run", "--mount", ":::", "--image", "a:b:c:d", "p"},
		{"run", "--env", "=", "p"}, {"run", "--cachedir", "", "p"}, {"run", "-dev=false"},
		{"sh", "-c"}, {"sh", "--user", "1:2:3"}, {"sh", "--mount=a:b:c:d:e"}, {"sh", "--image="}, {"sh", "--", "-x"},
		{"sh", "--user", "-1"}, {"sh", "-"},
		{"sh", "--overlay", "--image", "a:/:rw"}, {"sh", "--overlay-dir=", "--image", "a"}, {"sh", "--overlay=1"},
		{"run", "--overlay-dir", "", "--image", "a:/", "p"}, {"run", "--overlay", "--overlay-dir", "d", "p"},
		{"mount", "-t", "overlay", "-o", "lowerdir=::,upperdir=", "none", "x"},
		{"ls", "-laRZ", "x"}, {"ls", "--", "-l"}, {"cat", "a:b", "c"}, {"cp", "-ra", "x:/", "y", "z"}, {"stat", "--dereference"},
		{"tree"}, {"cp", "--archive", "--recursive"},
	} {
		f.Add([]byte(strings.Join(s, "\x00")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		args := strings.Split(string(data), "\x00")
		var err error
		switch cmd, rest := args[0], args[1:]; cmd {
		case "bench":
			_, _, _, _, err = parseBench(rest)
		case "mount":
			_, err = parseMountArgs(rest)
		case "run":
			var b preopenBuilder
			_, err = parseRunArgs(rest, &b)
		case "sh":
			_, err = parseShArgs(rest)
		case "ls", "cat", "stat", "tree":
			_, _, _, err = parseImageArgs(cmd, rest)
		default:
			return
		}
		if err != nil {
			if msg := err.Error(); msg == "" || strings.ContainsAny(oneLine(msg), "\n") {
				t.Errorf("%q: error %q: want one non-empty line", args, msg)
			}
		}
	})
}
