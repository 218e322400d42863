package pgdriver

import (
	"strings"

	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ParseURL parses a postgres:// (or postgresql://) URL into a pool
// configuration, with pgx's parameters (pool_max_conns, sslmode, …).
// Errors never quote the URL, which may hold a password.
func ParseURL(url string) (*pgxpool.Config, error) {
	scheme, rest, _ := strings.Cut(url, ":")
	if s := strings.ToLower(scheme); (s != "postgres" && s != "postgresql") || !strings.HasPrefix(rest, "//") {
		return nil, fencedtype.Invalid("database url", "want postgres://host/db")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &fencedtype.InvalidError{Field: "database url", Reason: err.Error()}
	}
	if err := takePromotionAdvance(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}
