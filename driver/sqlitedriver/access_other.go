//go:build !unix

package sqlitedriver

// writable cannot ask the operating system here; it says yes, and the
// messages fall back to SQLite's own.
func writable(string) bool { return true }
