//go:build unix

package sqlitedriver

import "golang.org/x/sys/unix"

// writable reports whether this process may write path (for a directory:
// create files in it), as the kernel judges it: its user and groups, and a
// read-only file system.
func writable(path string) bool { return unix.Access(path, unix.W_OK) == nil }
