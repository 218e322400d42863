package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/mysqldriver"
)

// mysqlBackend runs in a database of its own, and kills a worker's
// sessions with KILL CONNECTION, finding them by the worker process's TCP
// sockets: MySQL shows no name a client gives its session to other
// sessions (connection attributes need the performance schema, off by
// default on MariaDB), but PROCESSLIST shows each session's client port.
type mysqlBackend struct{}

var mysqlDialect = &dialect{
	name: "mysql",
	id:   "BIGINT AUTO_INCREMENT PRIMARY KEY", text: "VARCHAR(100)", bigint: "BIGINT",
	at:        "DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6))",
	tableEnd:  " ENGINE = InnoDB",
	forUpdate: " FOR UPDATE",
	keyedAt:   "TIMESTAMPDIFF(MICROSECOND, '1970-01-01', l.at)", clockedAt: true,
	disconnect: faultConnKill,
}

func (mysqlBackend) dialect() *dialect { return mysqlDialect }

func (b mysqlBackend) isolate(ctx context.Context, base, id string) (string, string, error) {
	name := "fenced_chaos_" + id
	c, err := b.open(ctx, base, fenced.Config{})
	if err != nil {
		return "", "", err
	}
	_, err = c.db.Exec(ctx, `CREATE DATABASE `+name+` CHARACTER SET utf8mb4`)
	c.Close()
	if err != nil {
		return "", "", fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", "", fmt.Errorf("database URL: %w", err)
	}
	u.Path = "/" + name
	return name, u.String(), nil
}

func (b mysqlBackend) drop(ctx context.Context, base, name string) error {
	c, err := b.open(ctx, base, fenced.Config{})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.db.Exec(ctx, `DROP DATABASE `+name)
	return err
}

func (mysqlBackend) workerURL(url, _, _ string) (string, error) { return url, nil }

func (mysqlBackend) open(ctx context.Context, url string, cfg fenced.Config) (*client, error) {
	d, err := mysqldriver.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return &client{Client: fenced.New(d, cfg), db: sqlQuerier{d.DB()}, closeDriver: d.Close}, nil
}

// disconnect kills one of the workers' sessions on the run's database,
// KILL CONNECTION, as an operator or a proxy would: the server rolls back
// its transaction and closes the connection.
func (mysqlBackend) disconnect(ctx context.Context, r *run, f fault) error {
	r.mu.Lock()
	pids := map[int]string{}
	for _, slot := range r.alive(true) {
		p := r.workers[slot]
		pids[p.cmd.Process.Pid] = p.name
	}
	r.mu.Unlock()
	owner := map[int]string{} // client port → worker
	for pid, name := range pids {
		ports, err := tcpPorts(pid)
		if err != nil {
			return fmt.Errorf("the sockets of worker %s: %w", name, err)
		}
		for _, port := range ports {
			owner[port] = name
		}
	}
	rows, err := r.c.db.Query(ctx, `SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE DB = ? ORDER BY ID`, r.schema)
	if err != nil {
		return err
	}
	var ids []int64
	var names []string
	for rows.Next() {
		var id int64
		var host string
		if err := rows.Scan(&id, &host); err != nil {
			rows.Close()
			return err
		}
		i := strings.LastIndexByte(host, ':')
		if i < 0 {
			continue // not a TCP session
		}
		if port, err := strconv.Atoi(host[i+1:]); err == nil && owner[port] != "" {
			ids, names = append(ids, id), append(names, owner[port])
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return errors.New("no worker session to kill")
	}
	i := f.pick % len(ids)
	// KILL takes no placeholder; the id is an integer the server gave.
	if _, err := r.c.db.Exec(ctx, `KILL CONNECTION `+strconv.FormatInt(ids[i], 10)); err != nil {
		return err
	}
	r.logf("nemesis: KILL CONNECTION %d of %s", ids[i], names[i])
	return nil
}

// tcpPorts lists the local ports of the TCP sockets process pid holds
// open, from /proc (Linux only).
func tcpPorts(pid int) ([]int, error) {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode …
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 || !inodes[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			if port, err := strconv.ParseUint(hexPort, 16, 16); err == nil {
				ports = append(ports, int(port))
			}
		}
	}
	return ports, nil
}
