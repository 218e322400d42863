package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// confirm asks before a change that cannot be undone; yes (the command's
// --yes) answers for the user. Without it, on a terminal (stdin and stderr
// both), it prints question and reads a line: "y" or "yes" goes on,
// anything else, or the end of stdin, refuses with exit code 1 having
// changed nothing. Off a terminal it refuses at once as a usage error (exit
// code 2): a script must say --yes, so that it never waits for an answer no
// one will type, nor runs the change unasked.
func (a *app) confirm(yes bool, command, question string) error {
	if yes {
		return nil
	}
	if !isTerminal(a.stdin) || !isTerminal(a.stderr) {
		return usage("%s changes %s for good: pass --yes to run it when stdin is not a terminal", command, a.shownURL())
	}
	fmt.Fprintf(a.stderr, "%s\nDatabase: %s\nContinue? [y/N] ", question, a.shownURL())
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: read the answer: %w", command, err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return &exitStatus{code: exitError, msg: fmt.Sprintf("%s not confirmed: nothing changed", command)}
}
