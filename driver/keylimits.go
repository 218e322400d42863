package driver

// KeyLimits are the per-key limits of one queue as a limited claim reads
// them (KeyLimitsSQL), to resolve each candidate's limit in Go rather than
// by subqueries per candidate. Limit resolves them exactly as
// jobKeyLimitSQL does.
type KeyLimits struct {
	queueDefault int
	kindDefault  map[string]int
	own          map[string]int
}

// KeyLimitsSQL reads the per-key limits of queue $1 that can apply to keys
// of $2: the queue's default, its kinds' defaults, and the own limits of
// those keys. Rows: kind, concurrency key, limit. Placeholders are
// PostgreSQL's.
const KeyLimitsSQL = `SELECT kind, concurrency_key, per_key_limit FROM fenced_job_limits
WHERE queue = $1 AND per_key_limit > 0
    AND (concurrency_key = '' OR (kind = '' AND concurrency_key = ANY($2::text[])))`

// Add records a row of KeyLimitsSQL.
func (l *KeyLimits) Add(kind, key string, limit int) {
	switch {
	case kind == "" && key == "":
		l.queueDefault = limit
	case key == "":
		if l.kindDefault == nil {
			l.kindDefault = map[string]int{}
		}
		l.kindDefault[kind] = limit
	case kind == "":
		if l.own == nil {
			l.own = map[string]int{}
		}
		l.own[key] = limit
	}
}

// Limit is the per-key limit of a job of kind with concurrency key: the
// key's own limit, else the kind's default, else the queue's; 0 when none
// is declared (or the job has no key).
func (l *KeyLimits) Limit(kind, key string) int {
	if key == "" {
		return 0
	}
	if n := l.own[key]; n > 0 {
		return n
	}
	if n := l.kindDefault[kind]; n > 0 {
		return n
	}
	return l.queueDefault
}
