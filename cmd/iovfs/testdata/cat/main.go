// cat is a wasip1 test program for iovfs run: "cat PATH..." copies each
// file to stdout; "cat -exit N" exits with status N; "cat -trap" divides
// by zero; "cat -stdin" copies stdin.
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
)

func main() {
	args := os.Args[1:]
	if len(args) == 2 && args[0] == "-exit" {
		n, _ := strconv.Atoi(args[1])
		os.Exit(n)
	}
	if len(args) == 1 && args[0] == "-stdin" {
		io.Copy(os.Stdout, os.Stdin)
		return
	}
	if len(args) == 1 && args[0] == "-trap" {
		var p *int
		fmt.Println(*p)
	}
	for _, a := range args {
		if a == "-n" {
			continue
		}
		f, err := os.Open(a)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		io.Copy(os.Stdout, f)
		f.Close()
	}
}
