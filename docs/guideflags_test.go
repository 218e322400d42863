//go:build unix

package docs

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestGuideFlagsExist holds every fenced command line written in a shell
// block of the README or of docs/ (runnable or not) to the binary: its
// subcommands must exist, and every --flag it passes must be one that
// command's --help lists. A flag the guides invent, or one the command
// loses, fails here even in a block nothing runs.
func TestGuideFlagsExist(t *testing.T) {
	docs := documents(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	docs["../README.md"] = codeBlocks(string(readme))
	h := helpCache{bin: fencedBinary(t), out: map[string]string{}}
	checked := 0
	for name, blocks := range docs {
		for _, b := range blocks {
			if b.info != "sh" && !strings.HasPrefix(b.info, "sh ") {
				continue
			}
			for i, line := range strings.Split(b.text, "\n") {
				for _, words := range fencedCalls(line) {
					checked++
					if msg := h.check(t, words); msg != "" {
						t.Errorf("%s:%d: %s\n\t%s", name, b.line+1+i, msg, strings.TrimSpace(line))
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no fenced command line to check")
	}
}

// callRE finds where a fenced command starts on a line: at its start, or
// after a pipe, a list operator, a command substitution or an opening quote
// of sh -c.
var callRE = regexp.MustCompile(`(?:^|[|;&(!]|\b(?:do|then|else|if|until|while|timeout \S+)\s|sh -c ['"])\s*(?:go run \./cmd/fenced|fenced)\s`)

// fencedCalls returns the words of each fenced command on a line, up to
// the end of its own arguments (a comment, "--" before a child command, a
// redirection or the next command of a pipe or list).
func fencedCalls(line string) [][]string {
	var calls [][]string
	for _, loc := range callRE.FindAllStringIndex(line, -1) {
		rest := line[loc[1]:]
		var words []string
		fields := strings.Fields(rest)
		for i, w := range fields {
			if w == "|" && i+1 < len(fields) && strings.HasPrefix(strings.TrimLeft(fields[i+1], "[("), "-") {
				continue // a synopsis's alternative: [--run-at T | --delay D]
			}
			if w == "#" || w == "--" || strings.HasPrefix(w, "#") || strings.ContainsAny(w[:1], "|;&>)<") {
				break
			}
			// A synopsis's brackets and parentheses are not part of a word.
			w = strings.TrimRight(strings.TrimLeft(w, "[("), ";&|)]'\"…")
			if w != "" && w != "|" {
				words = append(words, w)
			}
		}
		calls = append(calls, words)
	}
	return calls
}

// helpCache runs "fenced PATH --help" once per command path.
type helpCache struct {
	bin string
	out map[string]string
}

func (h helpCache) help(t *testing.T, path []string) string {
	key := strings.Join(path, " ")
	if out, ok := h.out[key]; ok {
		return out
	}
	out, err := exec.Command(h.bin, append(append([]string{}, path...), "--help")...).CombinedOutput()
	if err != nil {
		out = nil // not a command: its usage matches no path
	}
	h.out[key] = string(out)
	return string(out)
}

// valueFlags are the global flags that take a value as the next word.
var valueFlags = map[string]bool{"--db": true}

// check returns what is wrong with one fenced command's words, or "".
func (h helpCache) check(t *testing.T, words []string) string {
	var path, flags []string
	subcommands := true
	for i := 0; i < len(words); i++ {
		w := words[i]
		if strings.HasPrefix(w, "-") {
			name, _, _ := strings.Cut(w, "=")
			flags = append(flags, name)
			if valueFlags[name] && !strings.Contains(w, "=") {
				i++
			}
			continue
		}
		if !subcommands {
			continue
		}
		next := append(append([]string{}, path...), w)
		switch {
		case usage(h.help(t, next)) == strings.Join(append([]string{"fenced"}, next...), " "):
			path = next
		case strings.Contains(h.help(t, path), "\nAvailable Commands:"):
			return "fenced " + strings.Join(path, " ") + " has no subcommand " + w
		default:
			subcommands = false // an argument: the command is path
		}
	}
	help := h.help(t, path)
	for _, f := range flags {
		if f == "-h" || f == "--help" {
			continue
		}
		if !strings.Contains(help, " "+f+" ") && !strings.Contains(help, " "+f+"\n") && !strings.Contains(help, ", "+f+" ") {
			return "fenced " + strings.Join(path, " ") + " has no flag " + f
		}
	}
	return ""
}

// usage is the command path of a help text's first usage line ("fenced
// lease run" of "fenced lease run NAME [flags] -- COMMAND"): the words
// before the first argument or bracket.
func usage(help string) string {
	_, after, ok := strings.Cut(help, "Usage:\n")
	if !ok {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(after), "\n")
	var words []string
	for _, w := range strings.Fields(line) {
		if strings.ContainsAny(w[:1], "[(-") || strings.ToUpper(w) == w {
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}
