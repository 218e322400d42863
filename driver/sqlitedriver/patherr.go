package sqlitedriver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fenced/fenced/fencedtype"
	"modernc.org/sqlite"
)

// SQLite result codes the driver explains (the primary code is the low
// byte of an extended one).
const (
	codeError             = 1    // SQLITE_ERROR: a statement's own error (a missing table)
	codeReadOnly          = 8    // SQLITE_READONLY
	codeCantOpen          = 14   // SQLITE_CANTOPEN
	codeNotADB            = 26   // SQLITE_NOTADB
	codeReadOnlyDBMoved   = 1032 // SQLITE_READONLY_DBMOVED: the file was renamed or deleted while open
	codeReadOnlyDirectory = 1544 // SQLITE_READONLY_DIRECTORY: no -wal or -shm file can be created
)

// code is err's SQLite result code, or 0.
func code(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// openError describes a failure to open the database at path: its path and
// the cause, found from the file system where SQLite only says "unable to
// open database file".
func openError(path string, err error) error {
	return &fencedtype.ConnectError{Backend: fencedtype.DialectSQLite, Address: path, Cause: openCause(path, err), Err: err}
}

// openCause says why path could not be opened, looking where a person
// would: the directory, the path itself, then what SQLite refused (a file
// that is not a database, a read-only file or directory, one it cannot
// open), falling back to SQLite's own words.
func openCause(path string, err error) string {
	dir := filepath.Dir(path)
	st, serr := os.Stat(dir)
	switch {
	case errors.Is(serr, fs.ErrNotExist):
		return fmt.Sprintf("directory %s does not exist", dir)
	case serr != nil:
		return serr.Error()
	case !st.IsDir():
		return fmt.Sprintf("%s is not a directory", dir)
	}
	st, serr = os.Stat(path)
	switch {
	case serr == nil && st.IsDir():
		return fmt.Sprintf("%s is a directory", path)
	case code(err) == codeNotADB:
		return fmt.Sprintf("%s is not a SQLite database", path)
	case code(err)&0xff == codeReadOnly && !writable(dir):
		return walCause(path)
	case code(err)&0xff == codeReadOnly:
		return readOnlyCause(path, err)
	case code(err)&0xff != codeCantOpen:
		return err.Error()
	case errors.Is(serr, fs.ErrNotExist) && !writable(dir):
		return fmt.Sprintf("cannot create %s: directory %s is not writable", filepath.Base(path), dir)
	case serr != nil:
		return serr.Error()
	}
	f, oerr := os.Open(path)
	if oerr != nil {
		return oerr.Error()
	}
	f.Close()
	if !writable(dir) {
		return walCause(path)
	}
	return err.Error()
}

// readOnlyCause says why SQLite could not write the database at path.
func readOnlyCause(path string, err error) string {
	switch {
	case code(err) == codeReadOnlyDBMoved:
		return fmt.Sprintf("%s was renamed or deleted while open", path)
	case code(err) == codeReadOnlyDirectory, writable(path) && !writable(filepath.Dir(path)):
		return walCause(path)
	case !writable(path):
		return fmt.Sprintf("%s is read-only (no write permission)", path)
	}
	return fmt.Sprintf("%s is read-only", path)
}

// walCause explains why a database in a directory that is not writable
// cannot be opened, even to read: fenced keeps it in WAL mode, whose
// readers and writers share the -wal and -shm files beside it.
func walCause(path string) string {
	base := filepath.Base(path)
	return fmt.Sprintf("directory %s is not writable, and SQLite must create %s-wal and %s-shm there to open a database in WAL mode, even to read it",
		filepath.Dir(path), base, base)
}

// explainReadOnly names the file and the cause of a write SQLite refused
// because the database or its directory is read-only; other errors pass
// unchanged.
func (d *Driver) explainReadOnly(err error) error {
	if code(err)&0xff != codeReadOnly {
		return err
	}
	return fmt.Errorf("%s: %w", readOnlyCause(d.path, err), err)
}
