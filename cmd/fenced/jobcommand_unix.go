//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup starts child in a process group of its own: a Ctrl-C typed at
// the terminal reaches fenced, which stops gracefully, and not the running
// commands.
func ownGroup(child *exec.Cmd) { child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to child's process group.
func signalGroup(child *exec.Cmd, sig syscall.Signal) {
	if child.Process != nil {
		_ = syscall.Kill(-child.Process.Pid, sig)
	}
}
