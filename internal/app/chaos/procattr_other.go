//go:build !linux

package chaos

import "syscall"

// workerProcAttr is empty where the kernel cannot signal a child on its
// parent's death: a worker may then outlive a coordinator that was killed.
func workerProcAttr() *syscall.SysProcAttr { return nil }
