package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/jsoncheck"
)

// periodicHelp is what serve's help says of --periodic and --periodic-file.
const periodicHelp = `--periodic KIND=SCHEDULE has the maintenance enqueue a job of KIND (no
args, the default queue) once per slot of SCHEDULE: an interval such as 5m
or 1h, or a cron expression such as "0 9 * * 1-5" (UTC) or
"CRON_TZ=Europe/Paris 0 9 * * *". Give it once per job. --periodic-file
FILE reads a JSON array of such jobs with args and a queue:
  [{"kind": "report", "cron": "0 9 * * 1-5", "args": {"to": "ops"}},
   {"kind": "tick", "every": "5m", "queue": "low"}]
Each slot is enqueued once however many servers run the maintenance: by
the first round after it begins, under a key naming it.`

// periodicSpec is one job of a --periodic-file.
type periodicSpec struct {
	Kind  string          `json:"kind"`
	Every string          `json:"every"`
	Cron  string          `json:"cron"`
	Queue string          `json:"queue"`
	Args  json.RawMessage `json:"args"`
}

// parsePeriodic reads the jobs of --periodic flags and of a --periodic-file
// (none when file is ""), each checked as the maintenance will.
func parsePeriodic(flags []string, file string) ([]fenced.PeriodicJob, error) {
	var jobs []fenced.PeriodicJob
	for _, f := range flags {
		kind, schedule, ok := strings.Cut(f, "=")
		if !ok || kind == "" || strings.TrimSpace(schedule) == "" {
			return nil, usage("--periodic %q: want KIND=SCHEDULE, such as report=0 9 * * 1-5 or tick=5m", f)
		}
		p := fenced.PeriodicJob{Kind: kind}
		if d, err := time.ParseDuration(schedule); err == nil {
			p.Every = d
		} else {
			p.Cron = schedule
		}
		if err := p.Validate(); err != nil {
			return nil, usage("--periodic %q: %v", f, err)
		}
		jobs = append(jobs, p)
	}
	if file == "" {
		return jobs, nil
	}
	fromFile, err := readPeriodicFile(file)
	if err != nil {
		return nil, err
	}
	return append(jobs, fromFile...), nil
}

// readPeriodicFile reads and checks the jobs of a --periodic-file.
func readPeriodicFile(file string) ([]fenced.PeriodicJob, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, usage("--periodic-file: %v", err)
	}
	if msg := jsoncheck.SyntaxError(b); msg != "" {
		return nil, usage("--periodic-file %s: %s", file, msg)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var specs []periodicSpec
	if err := dec.Decode(&specs); err != nil {
		return nil, usage("--periodic-file %s: %v", file, err)
	}
	jobs := make([]fenced.PeriodicJob, 0, len(specs))
	for i, s := range specs {
		p := fenced.PeriodicJob{Kind: s.Kind, Cron: s.Cron, Queue: s.Queue}
		if len(s.Args) > 0 {
			p.Args = s.Args
		}
		if s.Every != "" {
			d, err := time.ParseDuration(s.Every)
			if err != nil {
				return nil, usage("--periodic-file %s: job %d (%q): every %q: want a duration such as 5m", file, i, s.Kind, s.Every)
			}
			p.Every = d
		}
		if err := p.Validate(); err != nil {
			return nil, usage("--periodic-file %s: job %d (%q): %v", file, i, s.Kind, err)
		}
		jobs = append(jobs, p)
	}
	return jobs, nil
}
