// tool is the wasip1 program the shell's tests run: its first argument
// names what it does.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tool COMMAND [ARG]...")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "args": // each argument in brackets, one per line
		for _, a := range args {
			fmt.Printf("[%s]\n", a)
		}
	case "argv0":
		fmt.Println(os.Args[0])
	case "exit":
		n, _ := strconv.Atoi(args[0])
		os.Exit(n)
	case "env": // the named variables, "-" for unset
		for _, a := range args {
			v, ok := os.LookupEnv(a)
			if !ok {
				v = "-"
			}
			fmt.Printf("%s=%s\n", a, v)
		}
	case "pwd":
		d, err := os.Getwd()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(d)
	case "cat": // files or standard input to standard output
		if len(args) == 0 {
			args = []string{"-"}
		}
		status := 0
		for _, a := range args {
			var r io.Reader = os.Stdin
			if a != "-" {
				f, err := os.Open(a)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					status = 1
					continue
				}
				defer f.Close()
				r = f
			}
			if _, err := io.Copy(os.Stdout, r); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		os.Exit(status)
	case "upper": // standard input to standard output, a-z made A-Z
		buf := make([]byte, 64<<10)
		for {
			n, err := os.Stdin.Read(buf)
			b := buf[:n]
			for i, c := range b {
				if 'a' <= c && c <= 'z' {
					b[i] = c - 32
				}
			}
			if _, werr := os.Stdout.Write(b); werr != nil {
				fmt.Fprintln(os.Stderr, werr)
				os.Exit(1)
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	case "lines": // count lines of standard input
		sc := bufio.NewScanner(os.Stdin)
		n := 0
		for sc.Scan() {
			n++
		}
		fmt.Println(n)
	case "stderr":
		fmt.Fprintln(os.Stderr, args[0])
	case "write": // PATH TEXT: create PATH holding TEXT
		if err := os.WriteFile(args[0], []byte(args[1]), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "yes": // "y" lines until the writes fail (ignoring the error)
		line := bytes.Repeat([]byte("y\n"), 1024)
		for {
			os.Stdout.Write(line)
		}
	case "sleep":
		ms, _ := strconv.Atoi(args[0])
		time.Sleep(time.Duration(ms) * time.Millisecond)
	case "spin": // compute until stopped
		x := 0
		for {
			x++
		}
	default:
		fmt.Fprintf(os.Stderr, "tool: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}
