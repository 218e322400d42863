// Command pgonly is a program that uses fenced on PostgreSQL alone: the
// dependency test checks it links neither SQLite nor MySQL.
package main

import (
	"context"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/pgdriver"
)

func main() {
	c, err := fenced.Open(context.Background(), "postgres://127.0.0.1/db", fenced.Config{})
	if err == nil {
		c.Close()
	}
}
