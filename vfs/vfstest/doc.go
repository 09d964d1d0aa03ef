// Package vfstest is a conformance suite for iovfs file systems, as
// testing/fstest is for io/fs and go-fuse's posixtest for FUSE servers.
package vfstest
