package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/fenced/fenced/internal/lib/wire"
	"github.com/spf13/cobra"
)

// defaultListLimit is the --limit of "job ls" (the library's default page).
const defaultListLimit = 100

func newJobCmd(a *app) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "job",
		Short: "Enqueue, inspect, cancel and retry jobs of the fenced job queue",
		Long: `A job is a unit of work a worker claims, runs and finishes. Every claim starts
a new attempt with a higher fence; the worker's writes for the job carry it,
so a worker that lost its job can no longer finish it. A job is queued
(possibly scheduled for later), running, succeeded, failed (attempts
exhausted: the dead letter) or cancelled, and keeps the history of its
attempts.

Cancelling a finished job, or retrying one that is not failed or cancelled,
exits 1: the command was well formed and nothing is stale, but the job's
state forbids it. A job that does not exist exits 5.`,
	})
	cmd.AddCommand(
		newJobEnqueueCmd(a),
		newJobShowCmd(a),
		newJobListCmd(a),
		newJobCancelCmd(a),
		newJobRetryCmd(a),
		newJobDeleteCmd(a),
		newJobCountsCmd(a),
		newJobLimitCmd(a),
		newJobSlotsCmd(a),
		newJobWorkCmd(a),
	)
	return cmd
}

// enqueueFlags are the options of "job enqueue".
type enqueueFlags struct {
	args        string
	argsFile    string
	metadata    string
	metaFile    string
	queue       string
	priority    int
	runAt       string
	delay       time.Duration
	maxAttempts int
	key         string
	concurrency string
	sequence    string
	continueSeq bool
	timeout     time.Duration
	retryBase   time.Duration
	retryMax    time.Duration
	retryJitter float64
	unique      uniqueFlags
	tags        []string
}

// uniqueFlags are enqueue's --unique* flags: any of them makes the job
// unique (fenced.UniqueOptions).
type uniqueFlags struct {
	kind     bool
	byArgs   bool
	argsKeys []string
	period   time.Duration
	byQueue  bool
	states   []string
}

func newJobEnqueueCmd(a *app) *cobra.Command {
	var f enqueueFlags
	var p fenced.EnqueueParams
	cmd := callCmd[wire.Enqueued]{
		check: func(cmd *cobra.Command, args []string) (err error) {
			if p, err = f.params(cmd, args[0]); err != nil {
				return err
			}
			return p.Validate()
		},
		call: func(ctx context.Context, c *fenced.Client, _ []string) (wire.Enqueued, error) {
			j, existing, err := c.Enqueue(ctx, p)
			if err != nil {
				return wire.Enqueued{}, err
			}
			return wire.Enqueued{Job: *j, Existing: existing}, nil
		},
		text: writeEnqueued,
	}.build(a, &cobra.Command{
		Use:   "enqueue KIND [--args JSON]",
		Short: "Add a job, or find the one enqueued before under the same --key",
		Long: `Add a job of KIND, whose handler gets --args, and print it.

It runs now, at --run-at (RFC 3339), or --delay from now by the database
clock. Lower --priority numbers run first. After --max-attempts failed
attempts the job is failed (the dead letter).

With --key, a second enqueue under the same idempotency key adds nothing: it
says the job the key names already exists ("existing": true with --json),
whatever its kind and arguments, and still exits 0.

With --unique, or any --unique-* flag, the job is unique: while a job of the
same kind (and, as the flags choose, the same args, args keys, queue and
window of its run time) is in one of the --unique-states (default queued,
running, succeeded), an enqueue adds nothing and says the existing job holds
the slot ("existing": true with --json), and still exits 0.

With --concurrency-key, the job's attempts count against the limit declared
for that key (fenced job limit); with --sequence-key, it runs only after the
jobs enqueued before it under the same sequence key of its queue, one at a
time.

--metadata (or --metadata-file) is a JSON object stored with the job and
given to every attempt: a "traceparent" (and "tracestate") member in it is
the W3C trace context a worker's span continues.

With --timeout, each attempt of the job is ended at that time (a worker
fails it with "job timed out after …" and retries it); --retry-base,
--retry-max and --retry-jitter give the job a retry backoff of its own.
Both come before the kind's and the worker's.`,
		Example: `  fenced job enqueue send-email --args '{"to": "ann@example.com"}'
  fenced job enqueue report --queue nightly --priority 5 --run-at 2030-01-02T03:00:00Z
  fenced job enqueue invoice --args '{"id": 42}' --key invoice-42 --delay 10m --json | jq .id
  jq -n '{to: "ann@example.com"}' | fenced job enqueue send-email --args-file -
  fenced job enqueue report --metadata "{\"traceparent\": \"$TRACEPARENT\"}"
  fenced job enqueue resize --timeout 5m --retry-base 1s --retry-max 1h
  fenced job enqueue sync-user --args '{"user": 7, "n": 1}' --unique-args-keys user --unique-period 1h`,
		Args: exactArgs("KIND"),
	})
	fl := cmd.Flags()
	fl.StringVar(&f.args, "args", "{}", "the job's arguments, as JSON")
	fl.StringVar(&f.argsFile, "args-file", "", "read the job's arguments, as JSON, from this file (- for stdin)")
	fl.StringVar(&f.metadata, "metadata", "", "a JSON object stored with the job and read by its workers (trace context: traceparent, tracestate)")
	fl.StringVar(&f.metaFile, "metadata-file", "", "read the job's metadata, a JSON object, from this file (- for stdin)")
	fl.StringVar(&f.queue, "queue", fenced.DefaultQueue, "queue to join")
	fl.IntVar(&f.priority, "priority", 0, fmt.Sprintf("0 runs first, up to %d", fenced.MaxPriority))
	fl.StringVar(&f.runAt, "run-at", "", "when to run, RFC 3339 (default now)")
	fl.DurationVar(&f.delay, "delay", 0, "run this long from now, by the database clock")
	fl.IntVar(&f.maxAttempts, "max-attempts", fenced.DefaultMaxAttempts,
		fmt.Sprintf("attempts before the job is failed (1 to %d)", fenced.MaxAttemptsLimit))
	fl.StringVar(&f.key, "key", "", "idempotency key: enqueue at most one job under it")
	fl.StringVar(&f.concurrency, "concurrency-key", "", "count the job's attempts against this key's limit (see job limit)")
	fl.StringVar(&f.sequence, "sequence-key", "", "run the job after the earlier jobs of this sequence of its queue, one at a time")
	fl.BoolVar(&f.continueSeq, "sequence-continue-on-failed", false,
		"if the job fails for good, let the later jobs of its sequence run (default: they wait until it is retried)")
	fl.DurationVar(&f.timeout, "timeout", 0, "end each attempt after this long; it fails and is retried (default none: the kind's or the worker's)")
	fl.DurationVar(&f.retryBase, "retry-base", 0, "the job's own retry backoff: the first delay (default 1s when a --retry flag is given)")
	fl.DurationVar(&f.retryMax, "retry-max", 0, "the job's own retry backoff: the longest delay (default 1h when a --retry flag is given)")
	fl.Float64Var(&f.retryJitter, "retry-jitter", 0.5, "the job's own retry backoff: the fraction of each delay that is random, 0 to 1")
	fl.BoolVar(&f.unique.kind, "unique", false, "make the job unique by its kind (the --unique-* flags add parts and imply it)")
	fl.BoolVar(&f.unique.byArgs, "unique-by-args", false, "unique by all the job's args")
	fl.StringSliceVar(&f.unique.argsKeys, "unique-args-keys", nil, "unique by these top-level keys of the args (comma-separated)")
	fl.DurationVar(&f.unique.period, "unique-period", 0, "unique within each window of this length of the run time (whole seconds)")
	fl.BoolVar(&f.unique.byQueue, "unique-by-queue", false, "unique within the job's queue")
	fl.StringSliceVar(&f.unique.states, "unique-states", nil,
		"the states in which the job holds its unique slot, comma-separated; must include queued and running (default queued,running,succeeded)")
	fl.StringArrayVar(&f.tags, "tag", nil, fmt.Sprintf("tag the job (repeat for more, at most %d, distinct): 1 to %d bytes of letters, digits and _ . : - /",
		fenced.MaxTags, fenced.MaxTagBytes))
	return cmd
}

// options are the unique options the flags give, or nil when none is set.
func (u *uniqueFlags) options(cmd *cobra.Command) (*fenced.UniqueOptions, error) {
	given := false
	for _, n := range []string{"unique", "unique-by-args", "unique-args-keys", "unique-period", "unique-by-queue", "unique-states"} {
		given = given || cmd.Flags().Changed(n)
	}
	if !given {
		return nil, nil
	}
	if cmd.Flags().Changed("unique-period") && u.period == 0 {
		return nil, invalid("unique by period", "0s is not a whole number of seconds from 1s to %s", fenced.MaxUniquePeriod)
	}
	if cmd.Flags().Changed("unique-states") && len(u.states) == 0 {
		return nil, invalid("unique states", "must not be empty")
	}
	o := &fenced.UniqueOptions{ByArgs: u.byArgs, ArgsKeys: u.argsKeys, ByPeriod: u.period, ByQueue: u.byQueue}
	for _, s := range u.states {
		o.ByState = append(o.ByState, fenced.JobState(strings.TrimSpace(s)))
	}
	return o, o.Validate()
}

// params checks what the library would not (a --run-at that is not RFC
// 3339, --run-at with --delay, an explicit empty --key or --queue or zero
// --max-attempts, which it would read as "not given") and builds the job.
// A refused value is an invalid-input error in the library's words, so
// that --max-attempts 0 and -5 are refused alike.
func (f *enqueueFlags) params(cmd *cobra.Command, kind string) (fenced.EnqueueParams, error) {
	p := fenced.EnqueueParams{Kind: kind, Args: json.RawMessage(f.args), Queue: f.queue, Priority: f.priority,
		Delay: f.delay, MaxAttempts: f.maxAttempts, IdempotencyKey: f.key,
		ConcurrencyKey: f.concurrency, SequenceKey: f.sequence, SequenceContinueOnFailed: f.continueSeq,
		Timeout: f.timeout, Tags: f.tags}
	fl := cmd.Flags()
	if fl.Changed("retry-base") || fl.Changed("retry-max") || fl.Changed("retry-jitter") {
		switch {
		case fl.Changed("retry-base") && f.retryBase <= 0:
			return p, invalid("retry base", "%s is not positive", f.retryBase)
		case fl.Changed("retry-max") && f.retryMax <= 0:
			return p, invalid("retry max", "%s is not positive", f.retryMax)
		case !(f.retryJitter >= 0 && f.retryJitter <= 1):
			return p, invalid("retry jitter", "%g is outside 0 to 1", f.retryJitter)
		}
		b := fenced.Backoff{Base: f.retryBase, Max: f.retryMax, Jitter: f.retryJitter}
		if b.Jitter == 0 {
			b.Jitter = -1 // none: the library's zero is the default
		}
		p.Retry = &b
	}
	if fl.Changed("run-at") && fl.Changed("delay") {
		return p, usage("--run-at and --delay cannot be used together")
	}
	if fl.Changed("args-file") {
		if fl.Changed("args") {
			return p, usage("--args and --args-file cannot be used together")
		}
		b, err := readJSONFile(cmd, "--args-file", f.argsFile, fenced.MaxArgsBytes)
		if err != nil {
			return p, err
		}
		p.Args = json.RawMessage(b)
	}
	switch {
	case fl.Changed("metadata") && fl.Changed("metadata-file"):
		return p, usage("--metadata and --metadata-file cannot be used together")
	case fl.Changed("metadata-file") && f.metaFile == "-" && f.argsFile == "-" && fl.Changed("args-file"):
		return p, usage("--args-file - and --metadata-file - cannot both read stdin")
	case fl.Changed("metadata"):
		p.Metadata = json.RawMessage(f.metadata)
	case fl.Changed("metadata-file"):
		b, err := readJSONFile(cmd, "--metadata-file", f.metaFile, fenced.MaxMetadataBytes)
		if err != nil {
			return p, err
		}
		p.Metadata = json.RawMessage(b)
	}
	if fl.Changed("run-at") {
		t, err := time.Parse(time.RFC3339, f.runAt)
		if err != nil {
			return p, invalid("run_at", "%q is not an RFC 3339 time such as 2030-01-02T03:04:05Z", f.runAt)
		}
		p.RunAt = t
	}
	switch {
	case fl.Changed("key") && f.key == "":
		return p, invalid("idempotency key", "must not be empty")
	case fl.Changed("concurrency-key") && f.concurrency == "":
		return p, invalid("concurrency key", "must not be empty")
	case fl.Changed("sequence-key") && f.sequence == "":
		return p, invalid("sequence key", "must not be empty")
	case f.queue == "":
		return p, invalid("queue", "must not be empty")
	case f.maxAttempts == 0:
		return p, invalid("max_attempts", "%d is outside 1 to %d", f.maxAttempts, fenced.MaxAttemptsLimit)
	}
	u, err := f.unique.options(cmd)
	p.Unique = u
	return p, err
}

// readJSONFile reads the file of a flag (--args-file, --metadata-file),
// stdin for "-", up to one byte past limit, so that an oversized file is
// refused as too large by the library without being read whole.
func readJSONFile(cmd *cobra.Command, flag, name string, limit int) ([]byte, error) {
	r := cmd.InOrStdin()
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, usage("%s: %v", flag, err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, usage("%s %s: %v", flag, name, err)
	}
	return b, nil
}

// writeEnqueued prints the outcome of "job enqueue".
func writeEnqueued(w io.Writer, e wire.Enqueued) error {
	j := &e.Job
	details := fmt.Sprintf("kind %s, queue %s, priority %d, state %s, run_at %s",
		display.Quote(j.Kind), display.Quote(j.Queue), j.Priority, jobStateText(j), fencedtype.FormatTime(j.RunAt))
	var err error
	switch {
	case e.Existing && j.IdempotencyKey == "":
		_, err = fmt.Fprintf(w, "job %d already exists and holds the unique slot; nothing enqueued (%s)\n", j.ID, details)
	case e.Existing:
		_, err = fmt.Fprintf(w, "job %d already exists with idempotency key %s; nothing enqueued (%s)\n",
			j.ID, display.Quote(j.IdempotencyKey), details)
	default:
		_, err = fmt.Fprintf(w, "enqueued job %d: %s\n", j.ID, details)
	}
	return err
}

func newJobShowCmd(a *app) *cobra.Command {
	var id int64
	return callCmd[wire.JobHistory]{
		read: true,
		check: func(_ *cobra.Command, args []string) (err error) {
			id, err = fenced.ParseJobID(args[0])
			return err
		},
		call: func(ctx context.Context, c *fenced.Client, _ []string) (wire.JobHistory, error) {
			j, attempts, err := c.GetJob(ctx, id)
			if err != nil {
				return wire.JobHistory{}, jobNotFound(id, err)
			}
			return wire.JobHistoryFrom(j, attempts), nil
		},
		text: writeJobHistory,
	}.build(a, &cobra.Command{
		Use:   "show ID",
		Short: "Show a job and the history of its attempts",
		Long: `Show a job and every attempt made at it: its fence, its worker, when it
started and ended, and how it ended (succeeded, retry, failed, snoozed,
cancelled, lost, or running for the attempt in progress).`,
		Example: `  fenced job show 42
  fenced job show 42 --json | jq '.attempts[] | select(.outcome == "retry") | .error'`,
		Args:        exactArgs("ID"),
		Annotations: map[string]string{annotationJobID: "ID"},
	})
}

// writeJobHistory prints a job, a blank line, and its attempts.
func writeJobHistory(w io.Writer, h wire.JobHistory) error {
	if err := writeJob(w, h.Job); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return writeAttempts(w, h.Attempts)
}

func newJobListCmd(a *app) *cobra.Command {
	var f fenced.JobFilter
	var state string
	var asJSON, allTags bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List jobs by id, a page at a time",
		Long: `List jobs in id order, at most --limit of them, after the id --after; with
--newest, newest first, before the id --before. --failing keeps the jobs
whose last attempt failed and that have not succeeded since (with --state
queued: those waiting to retry). When a page is full, the command to get
the next one is printed to stderr.`,
		Example: `  fenced job ls --state failed
  fenced job ls --newest --limit 20
  fenced job ls --state queued --failing
  fenced job ls --tag tenant:42 --tag urgent --all-tags
  fenced job ls --queue nightly --kind report --limit 20 --after 140
  fenced job ls --state running --json | jq -r '.[] | "\(.id) \(.owner)"'`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The library reads a zero limit as "default", and an empty
			// filter, such as --queue "$Q" with Q unset, as none, which
			// would list every job.
			if f.Limit == 0 {
				return invalid("limit", "%d is outside 1 to %d", f.Limit, fenced.MaxListLimit)
			}
			for _, name := range []string{"state", "queue", "kind"} {
				if fl := cmd.Flags().Lookup(name); fl.Changed && fl.Value.String() == "" {
					return invalid(name, "must not be empty")
				}
			}
			f.State = fenced.JobState(state)
			if allTags {
				if len(f.Tags) == 0 {
					return usage("--all-tags needs --tag")
				}
				f.TagsMatch = fenced.TagsAll
			}
			switch {
			case f.Desc && f.AfterID != 0:
				return usage("--after pages oldest first: with --newest, give --before")
			case !f.Desc && f.BeforeID != 0:
				return usage("--before pages newest first: give it with --newest")
			}
			if err := fenced.ValidateListJobs(f); err != nil {
				return err
			}
			c, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			jobs, err := c.ListJobs(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), wire.List(jobs))
			}
			if err := writeJobTable(cmd.OutOrStdout(), jobs); err != nil {
				return err
			}
			if len(jobs) == f.Limit {
				next := "--after"
				if f.Desc {
					next = "--before"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "(more may follow: add %s %d)\n", next, jobs[len(jobs)-1].ID)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&state, "state", "", "only jobs in this state: pending (workflow tasks waiting for their dependencies), queued, running, succeeded, failed or cancelled")
	fl.StringVar(&f.Queue, "queue", "", "only jobs of this queue")
	fl.StringVar(&f.Kind, "kind", "", "only jobs of this kind")
	fl.IntVar(&f.Limit, "limit", defaultListLimit, fmt.Sprintf("at most this many jobs (1 to %d)", fenced.MaxListLimit))
	fl.Int64Var(&f.AfterID, "after", 0, "only jobs with a greater id: the last id of the previous page")
	fl.BoolVar(&f.Desc, "newest", false, "newest first (id descending)")
	fl.Int64Var(&f.BeforeID, "before", 0, "with --newest: only jobs with a smaller id, the last id of the previous page")
	fl.BoolVar(&f.Failing, "failing", false, "only jobs whose last attempt failed and that have not succeeded since")
	fl.StringArrayVar(&f.Tags, "tag", nil, "only jobs carrying this tag (repeat: any of them, or all with --all-tags)")
	fl.BoolVar(&allTags, "all-tags", false, "with --tag: only jobs carrying every tag given")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// jobNotFound names the job that was not found: "job 42 not found".
func jobNotFound(id int64, err error) error {
	if errors.Is(err, fenced.ErrNotFound) {
		return fmt.Errorf("job %d %w", id, fenced.ErrNotFound)
	}
	return err
}
