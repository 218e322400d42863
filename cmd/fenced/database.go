package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/all" // the command opens every backend by URL
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/internal/lib/dburl"
)

// envDatabaseURL names the environment variable read when --db is not given.
const envDatabaseURL = "FENCED_DATABASE_URL"

// defaultURLHelp describes the default database in flag help.
const defaultURLHelp = "fenced.db in the working directory"

// databaseURL is --db, else $FENCED_DATABASE_URL, else empty (which
// fenced.Open reads as fenced.DefaultDatabaseURL).
func (a *app) databaseURL() string {
	if a.db != "" {
		return a.db
	}
	return a.getenv(envDatabaseURL)
}

// open connects to the database for a command that writes and applies any
// pending migrations first, so every such command works on a fresh
// database (the default SQLite file is created). A database that needs
// migrating and cannot be written fails saying so.
func (a *app) open(ctx context.Context) (*fenced.Client, error) {
	return a.openWith(ctx, fenced.Config{})
}

// openRead connects to the database for a command that only reads: it
// never migrates, nor creates anything, so pointing it at the wrong
// database leaves that database as it was, and it needs no write access
// (a read-only role, file or mount). A database with migrations pending
// (never migrated, or not by this release) is refused with a
// *fenced.NotMigratedError that says to run "fenced migrate"; so is a
// SQLite file that does not exist, which is not created.
func (a *app) openRead(ctx context.Context) (*fenced.Client, error) {
	if url := a.databaseURL(); dburl.Backend(url) == fenced.DialectSQLite {
		if url == "" {
			url = fenced.DefaultDatabaseURL
		}
		// A missing directory is left to the open, which says so.
		if path, err := sqlitedriver.ParseURL(url); err == nil && isDir(filepath.Dir(path)) {
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s: %w: %s does not exist (run \"fenced migrate\" to create it)", a.shownURL(), fenced.ErrNotMigrated, path)
			}
		}
	}
	c, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	pending, err := c.PendingMigrations(ctx)
	if err == nil && len(pending) > 0 {
		err = &fenced.NotMigratedError{Backend: c.Driver().Dialect(), Pending: pending}
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", a.shownURL(), err)
	}
	return c, nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// openWith is open with a Client configuration.
func (a *app) openWith(ctx context.Context, cfg fenced.Config) (*fenced.Client, error) {
	c, err := a.connectWith(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pending, err := c.PendingMigrations(ctx)
	if err == nil && len(pending) > 0 {
		if _, merr := c.Migrate(ctx); merr != nil {
			err = fmt.Errorf("the database needs migrating (%s pending) and migrating it failed: %w", versions(pending), merr)
		}
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%s: %w", a.shownURL(), err)
	}
	return c, nil
}

// versions lists migration versions for a message: "migration 3",
// "migrations 1, 2, 3".
func versions(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	if len(s) == 1 {
		return "migration " + s[0]
	}
	return "migrations " + strings.Join(s, ", ")
}

// connect opens the database without migrating it.
func (a *app) connect(ctx context.Context) (*fenced.Client, error) {
	return a.connectWith(ctx, fenced.Config{})
}

func (a *app) connectWith(ctx context.Context, cfg fenced.Config) (*fenced.Client, error) {
	c, err := fenced.Open(ctx, a.databaseURL(), cfg)
	var ce *fenced.ConnectError
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, fenced.ErrInvalid):
		return nil, err // already names the URL, redacted
	case errors.As(err, &ce):
		return nil, err // one line: the backend, its address and the cause
	}
	return nil, fmt.Errorf("open %s: %w", a.shownURL(), err)
}

// shownURL is the database URL as messages show it: password redacted.
func (a *app) shownURL() string {
	u := a.databaseURL()
	if u == "" {
		u = fenced.DefaultDatabaseURL
	}
	return redactURL(u)
}

// redactURL replaces the password of a database URL, in its user info or its
// password query parameter, with "***".
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redactRaw(raw)
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "***")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "***")
		u.RawQuery = q.Encode()
	}
	// url.URL.String would escape the stars.
	return strings.ReplaceAll(u.String(), "%2A%2A%2A", "***")
}

// redactRaw redacts a URL that net/url cannot parse: whatever follows the
// first ':' of the user info is dropped.
func redactRaw(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	at := strings.LastIndex(rest, "@")
	if !ok || at < 0 {
		return raw
	}
	user, _, _ := strings.Cut(rest[:at], ":")
	return scheme + "://" + user + ":***" + rest[at:]
}

// passwords returns the secrets in a database URL, in the forms a message
// may quote them: as given and decoded.
func passwords(raw string) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	if scheme, rest, ok := strings.Cut(raw, "://"); ok && scheme != "" {
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, p, ok := strings.Cut(rest[:at], ":"); ok {
				add(p)
			}
		}
	}
	if u, err := url.Parse(raw); err == nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		for _, p := range u.Query()["password"] {
			add(p)
		}
	}
	return out
}

// scrub removes the database URL and its password from msg: the URL is
// replaced by its redacted form, then any remaining occurrence of the
// password. Passwords shorter than 4 bytes are only removed as part of the
// URL, since scrubbing them elsewhere would mangle ordinary words.
func (a *app) scrub(msg string) string {
	raw := a.databaseURL()
	if raw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, raw, redactURL(raw))
	for _, p := range passwords(raw) {
		if len(p) >= 4 {
			msg = strings.ReplaceAll(msg, p, "***")
		}
	}
	return msg
}
