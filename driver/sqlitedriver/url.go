package sqlitedriver

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

func init() {
	driver.Register(func(ctx context.Context, url string) (driver.Driver, error) {
		path, err := ParseURL(url)
		if err != nil {
			return nil, err
		}
		return Open(ctx, path)
	}, "sqlite", "sqlite3", "file")
}

// ParseURL returns the file path a sqlite: URL names:
//
//	sqlite:relative/path/fenced.db
//	sqlite:///absolute/path/fenced.db
//
// (also sqlite3: and file:). The path is cleaned; a query, fragment or NUL
// byte is refused, since the driver sets every connection setting itself.
// Errors never quote the URL, which may hold a password.
func ParseURL(url string) (string, error) {
	scheme, path, ok := strings.Cut(url, ":")
	switch strings.ToLower(scheme) {
	case "sqlite", "sqlite3", "file":
	default:
		ok = false
	}
	if !ok {
		return "", fencedtype.Invalid("database url", "want sqlite:PATH")
	}
	if strings.HasPrefix(path, "//") {
		// sqlite:///abs/path has an empty host; sqlite://host/… is not a file.
		path = path[2:]
		if !strings.HasPrefix(path, "/") {
			return "", fencedtype.Invalid("database url", "sqlite://HOST/… names no file: use sqlite:///absolute/path or sqlite:relative/path")
		}
	}
	if path == "" || strings.ContainsAny(path, "?#\x00") {
		return "", fencedtype.Invalid("database url", "want sqlite:PATH with no query, fragment or NUL byte")
	}
	return filepath.Clean(path), nil
}
