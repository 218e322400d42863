package testetcd

import "syscall"

// dieWithParent makes the kernel kill a member's process when the test
// process that started it ends, however it ends.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
