//go:build !unix

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup does nothing where process groups are not Unix's.
func ownGroup(*exec.Cmd) {}

// signalGroup ends child: without Unix signals, SIGTERM is a kill too.
func signalGroup(child *exec.Cmd, _ syscall.Signal) {
	if child.Process != nil {
		_ = child.Process.Kill()
	}
}
