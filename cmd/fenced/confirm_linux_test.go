package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the controlling side, which a test
// writes a user's typing to and reads the screen from, and the terminal a
// child process gets as its stdin and stderr. Both close when the test
// ends.
func openPTY(t *testing.T) (control, term *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { control.Close() })
	fd := int(control.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("number of the pseudo-terminal: %v", err)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the terminal: %v", err)
	}
	t.Cleanup(func() { term.Close() })
	return control, term
}

// On a terminal, fence advance asks: "n" exits 1 and changes nothing, "y"
// advances.
func TestFenceAdvanceOnATerminalAsks(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	c.ok("lease", "acquire", "job", "--owner", "A")
	answer := func(typed string) (int, string, string) {
		control, term := openPTY(t)
		cmd := c.command(context.Background(), "fence", "advance", "--by", "100")
		var stdout bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = term, &stdout, term
		if err := cmd.Start(); err != nil {
			t.Fatalf("start: %v", err)
		}
		term.Close()
		screen := make(chan string)
		go func() {
			b, _ := io.ReadAll(control) // ends with EIO once the child has exited
			screen <- string(b)
		}()
		if _, err := control.WriteString(typed + "\n"); err != nil {
			t.Fatalf("type: %v", err)
		}
		cmd.Wait()
		return cmd.ProcessState.ExitCode(), stdout.String(), <-screen
	}
	code, stdout, screen := answer("n")
	if code != 1 || stdout != "" || !strings.Contains(screen, "moves fences and job ids up by 100") ||
		!strings.Contains(screen, "Continue? [y/N]") || !strings.Contains(screen, "fence advance not confirmed: nothing changed") {
		t.Fatalf("answered n: exit %d, stdout %q, screen %q", code, stdout, screen)
	}
	if l := showLease(c, "job"); !l.Held || l.Fence != 1 {
		t.Fatalf("after answering n: %+v, want the lease held at fence 1", l)
	}
	code, stdout, screen = answer("y")
	if code != 0 || !strings.Contains(stdout, "new floor 101") {
		t.Fatalf("answered y: exit %d, stdout %q, screen %q", code, stdout, screen)
	}
	if l := showLease(c, "job"); l.Held {
		t.Fatalf("after answering y: %+v, want the lease ended", l)
	}
}
