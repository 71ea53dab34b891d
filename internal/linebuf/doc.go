// Package linebuf gathers what a child process or a server's goroutine
// writes, for another goroutine to read while the writing goes on: tests
// and the soak wait on a line such as "listening on ..." in a process's
// output before they talk to it.
package linebuf
