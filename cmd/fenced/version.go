package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/fenced
var version = "dev"

// versionString is version, with the module version and Go version from the
// build info when available ("fenced dev (module v1.2.3, go1.26.8)").
func versionString() string {
	s := version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return s + " (" + runtime.Version() + ")"
	}
	if mv := info.Main.Version; mv != "" && mv != "(devel)" && mv != version {
		return fmt.Sprintf("%s (module %s, %s)", s, mv, info.GoVersion)
	}
	return fmt.Sprintf("%s (%s)", s, info.GoVersion)
}

// versionLine is what "fenced version" and "fenced --version" both print.
func versionLine() string { return "fenced " + versionString() + "\n" }

// versionTemplate makes cobra's --version print versionLine (its default
// template says "fenced version …"). Braces in the version are quoted so
// the template prints them as they are.
func versionTemplate() string {
	return fmt.Sprintf("{{%q}}", versionLine())
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of fenced (the same line as --version)",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}
