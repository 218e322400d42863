package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newMigrateCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations",
		Long: `Apply the schema migrations the database has not yet had, and print the
versions applied ("up to date" when there were none). Every command that
writes migrates first too; the commands that only read (ls, show, counts,
slots) never do, and fail on a database not migrated. Run this to migrate
ahead of a deploy, or before reading a database nothing has written yet.`,
		Example: `  fenced migrate
  fenced --db postgres://fenced@db:5432/fenced migrate`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			applied, err := c.Migrate(cmd.Context())
			if err != nil {
				return fmt.Errorf("%s: %w", a.shownURL(), err) // the driver's error says "migrate"
			}
			w := cmd.OutOrStdout()
			if asJSON {
				if applied == nil {
					applied = []int{}
				}
				return writeJSON(w, struct {
					Applied []int `json:"applied"`
				}{applied})
			}
			if len(applied) == 0 {
				_, err = fmt.Fprintln(w, "up to date")
				return err
			}
			for _, v := range applied {
				if _, err := fmt.Fprintf(w, "applied migration %d\n", v); err != nil {
					return err
				}
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}
