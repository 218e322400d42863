//go:build !linux

package testetcd

import "syscall"

// dieWithParent is Linux only: elsewhere a member outlives a test process
// that is killed, until it is killed too.
func dieWithParent() *syscall.SysProcAttr { return nil }
