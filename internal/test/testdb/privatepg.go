package testdb

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

// PrivatePostgres is a PostgreSQL cluster of a test's own: initdb'd in a
// temporary directory from the server binaries on this machine (Debian's
// /usr/lib/postgresql/N/bin, the newest N), listening on a free loopback
// port with trust authentication. It is another cluster than the shared
// test server: another system identifier, its own databases. Tests use it
// to restore into a cluster that is not the one a dump came from, and to
// stop, copy and restart a data directory.
type PrivatePostgres struct {
	t    testing.TB
	bin  string
	dir  string
	port int
}

// PostgresBin is the directory of the newest PostgreSQL server binaries on
// this machine. Without them the test skips, except under CI=true, where it
// fails.
func PostgresBin(t testing.TB) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) < pgMajor(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	requireServer(t, "the PostgreSQL server binaries (/usr/lib/postgresql/N/bin, apt-get install postgresql)",
		fmt.Errorf("no initdb under /usr/lib/postgresql/*/bin"))
	return ""
}

func pgMajor(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

// NewPrivatePostgres initdbs and starts a cluster, stopped and removed when
// the test ends. Run as root, the server runs as the postgres user (initdb
// refuses root).
func NewPrivatePostgres(t testing.TB) *PrivatePostgres {
	t.Helper()
	p := &PrivatePostgres{t: t, bin: PostgresBin(t)}
	dir, err := os.MkdirTemp("", "fenced-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p.dir = dir
	t.Cleanup(func() {
		p.run("pg_ctl", "-D", p.DataDir(), "-m", "immediate", "stop")
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, the cluster runs as postgres: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := p.run("initdb", "-D", p.DataDir(), "-U", "postgres", "--auth=trust", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	p.port = freePort(t)
	conf := fmt.Sprintf("port = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\n", p.port, dir)
	f, err := os.OpenFile(filepath.Join(p.DataDir(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	return p
}

// freePort is a loopback port nothing listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// run runs one of the server binaries, as postgres when the test is root.
func (p *PrivatePostgres) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(p.bin, name)
	if os.Geteuid() == 0 {
		args = append([]string{"-u", "postgres", "--", path}, args...)
		path = "runuser"
	}
	return osexec.Command(path, args...).CombinedOutput()
}

// DataDir is the cluster's data directory.
func (p *PrivatePostgres) DataDir() string { return filepath.Join(p.dir, "data") }

// Start starts the cluster and waits until it accepts connections.
func (p *PrivatePostgres) Start() {
	p.t.Helper()
	if out, err := p.run("pg_ctl", "-D", p.DataDir(), "-l", filepath.Join(p.dir, "log"), "-w", "-t", "300", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		p.t.Fatalf("start the private cluster: %v\n%s\n%s", err, out, log)
	}
}

// Stop stops the cluster cleanly (a checkpoint first), so its data
// directory can be copied.
func (p *PrivatePostgres) Stop() {
	p.t.Helper()
	if out, err := p.run("pg_ctl", "-D", p.DataDir(), "-m", "fast", "-w", "-t", "300", "stop"); err != nil {
		p.t.Fatalf("stop the private cluster: %v\n%s", err, out)
	}
}

// CopyDataDir copies the (stopped) cluster's data directory to dst, as a
// filesystem snapshot would, keeping owners and modes.
func (p *PrivatePostgres) CopyDataDir(dst string) {
	p.t.Helper()
	if out, err := osexec.Command("cp", "-a", p.DataDir(), dst).CombinedOutput(); err != nil {
		p.t.Fatalf("copy the data directory: %v\n%s", err, out)
	}
}

// RestoreDataDir replaces the (stopped) cluster's data directory with src,
// a copy CopyDataDir made: a filesystem or VM snapshot restored in place.
func (p *PrivatePostgres) RestoreDataDir(src string) {
	p.t.Helper()
	if err := os.RemoveAll(p.DataDir()); err != nil {
		p.t.Fatal(err)
	}
	if out, err := osexec.Command("cp", "-a", src, p.DataDir()).CombinedOutput(); err != nil {
		p.t.Fatalf("restore the data directory: %v\n%s", err, out)
	}
}

// SnapshotDir is a path inside the cluster's temporary directory (removed
// with it) for a copy of the data directory.
func (p *PrivatePostgres) SnapshotDir(name string) string { return filepath.Join(p.dir, name) }

// URL is the URL of database db as user postgres.
func (p *PrivatePostgres) URL(db string) string {
	return p.UserURL("postgres", db)
}

// UserURL is the URL of database db as role user.
func (p *PrivatePostgres) UserURL(user, db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", url.PathEscape(user), p.port, url.PathEscape(db))
}

// PostgresDump dumps the schema of rawURL's search_path (a URL from
// Postgres) with pg_dump, without owners or privileges, as a logical
// backup of a fenced database would be taken.
func PostgresDump(t testing.TB, rawURL string) []byte {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parse url: %v", err)
	}
	schema := u.Query().Get("search_path")
	if schema == "" {
		t.Fatal("PostgresDump needs a URL from Postgres (with its search_path)")
	}
	u.RawQuery = url.Values{"sslmode": {u.Query().Get("sslmode")}}.Encode()
	cmd := osexec.Command(filepath.Join(PostgresBin(t), "pg_dump"), "--no-owner", "--no-privileges",
		"--schema="+schema, "--dbname="+u.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, stderr.Bytes())
	}
	return out
}

// PostgresRestore runs a dump with psql into the database of rawURL (no
// fenced parameters in it), stopping at the first error.
func PostgresRestore(t testing.TB, rawURL string, dump []byte) {
	t.Helper()
	cmd := osexec.Command(filepath.Join(PostgresBin(t), "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "--dbname="+rawURL)
	cmd.Stdin = bytes.NewReader(dump)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql restore: %v\n%s", err, out)
	}
}

// WithSearchPath returns rawURL with search_path set to schema.
func WithSearchPath(t testing.TB, rawURL, schema string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("parse url: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// PostgresDatabase creates an empty database on the shared test server,
// dropped (with any connection left to it) when the test ends, and returns
// its URL: another database of the same cluster.
func PostgresDatabase(t testing.TB) string {
	t.Helper()
	base := PostgresURL()
	requirePostgres(t)
	name := "fenced_t_" + randomHex(6)
	exec(t, base, `CREATE DATABASE `+name)
	t.Cleanup(func() { exec(t, base, `DROP DATABASE `+name+` WITH (FORCE)`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", base, err)
	}
	u.Path = "/" + name
	return u.String()
}
