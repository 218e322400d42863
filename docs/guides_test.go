//go:build unix

package docs

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// guides are the documents a newcomer follows step by step: each must hold
// at least one block that runs, so a guide cannot pass by marking all of
// its commands illustrative.
var guides = []string{
	"leases.md",
	"jobs.md",
	"limits.md",
	"election.md",
	"production.md",
	"operations.md",
	"cli.md",
	"http.md",
}

// shellLangs are the info strings of shell blocks: each must say whether
// it runs, so none is skipped for being spelled "bash".
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "zsh": true}

// blockTimeout bounds one block: a block that starts a server or a loop
// must end it itself, and one that hangs fails here instead of holding
// the test until go test's own limit.
const blockTimeout = 2 * time.Minute

// TestGuideCommandsRun runs every runnable shell block of every document
// under docs/ (a block whose info string is exactly "sh") as a reader
// would: the blocks of one document in order, each with bash -euo
// pipefail, in one fresh directory per document whose fenced.db (the
// default database) carries the state from block to block, with a fenced
// built from this tree first on PATH. A block that needs a server of its
// own or shows a sketch says so with "sh no-run", and is only read by
// TestGuideFlagsExist.
func TestGuideCommandsRun(t *testing.T) {
	docs := documents(t)
	for _, name := range guides {
		if _, ok := docs[name]; !ok {
			t.Errorf("guide %s is missing", name)
		} else if runnable(docs[name]) == 0 {
			t.Errorf("guide %s has no runnable ```sh block", name)
		}
	}
	for name, doc := range docs {
		for _, b := range doc {
			lang, _, _ := strings.Cut(b.info, " ")
			if shellLangs[lang] && b.info != "sh" && b.info != "sh no-run" {
				t.Errorf("%s:%d: a shell block is \"sh\" (run) or \"sh no-run\", not %q", name, b.line, b.info)
			}
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		skipOutsideCI(t, "bash is not installed")
	}
	for _, tool := range []string{"curl", "jq", "openssl", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOutsideCI(t, tool+" is not installed (the guides use it)")
		}
	}
	bin := fencedBinary(t)
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		doc := docs[name]
		if runnable(doc) == 0 {
			continue
		}
		t.Run(strings.TrimSuffix(name, ".md"), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, b := range doc {
				if b.info != "sh" {
					continue
				}
				out, err := runBlock(bash, bin, dir, b.text)
				if err != nil {
					t.Fatalf("%s:%d: the block failed (%v):\n%s\n--- output:\n%s", name, b.line, err, b.text, out)
				}
			}
		})
	}
}

// runBlock runs one block in dir and returns its combined output. The
// block runs in a process group of its own, killed when the block ends, so
// a server or loop it left behind does not outlive it.
func runBlock(bash, bin, dir, text string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-euo", "pipefail", "-c", text)
	cmd.Dir = dir
	cmd.Env = guideEnv(bin, dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Start()
	if err == nil {
		err = cmd.Wait()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	return out.Bytes(), err
}

// guideEnv is the test's environment with the built fenced first on PATH,
// and none of the variables that would point fenced elsewhere: the
// database is fenced.db in the block's directory, as for a new user.
func guideEnv(bin, dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "FENCED_DATABASE_URL", "FENCED_TOKENS", "FENCED_TOKEN", "FENCED_URL", "HOME":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+dir,
	)
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildOut  []byte
)

// fencedBinary builds ./cmd/fenced once per test process, into a
// directory removed when the process's tests are done.
func fencedBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fenced-guides-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "fenced")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/fenced")
		cmd.Dir = ".."
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/fenced: %v\n%s", buildErr, buildOut)
	}
	return builtBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// skipOutsideCI skips the test, or fails it under CI=true, where every
// tool the guides use must be there.
func skipOutsideCI(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// block is one fenced code block of a markdown document.
type block struct {
	info string // the info string after the opening fence, trimmed
	text string
	line int // of the opening fence, 1-based
}

// codeBlocks returns the fenced code blocks of a markdown document.
func codeBlocks(md string) []block {
	var out []block
	var cur *block
	var body []string
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "```") {
			if cur != nil {
				body = append(body, line)
			}
			continue
		}
		if cur == nil {
			cur = &block{info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: i + 1}
			body = nil
			continue
		}
		cur.text = strings.Join(body, "\n") + "\n"
		out = append(out, *cur)
		cur = nil
	}
	return out
}

// runnable counts the blocks that TestGuideCommandsRun runs.
func runnable(bs []block) int {
	n := 0
	for _, b := range bs {
		if b.info == "sh" {
			n++
		}
	}
	return n
}

// documents reads the markdown documents of docs/ by file name.
func documents(t *testing.T) map[string][]block {
	t.Helper()
	paths, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]block{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs[p] = codeBlocks(string(b))
	}
	return docs
}
