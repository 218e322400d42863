package chaos

import "syscall"

// workerProcAttr has the kernel SIGKILL a worker when the coordinator dies
// (even a stopped one, which the coordinator's SIGCONT would never reach),
// so no worker outlives the run that started it.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
