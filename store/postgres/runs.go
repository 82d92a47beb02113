package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// Limits on RunFilter.Limit.
const (
	defaultLimit = 50
	maxLimit     = 1000
)

// dbTime returns t as stored: PostgreSQL keeps microseconds, and truncating
// here (rather than leaving it to the encoding) makes it explicit.
func dbTime(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}

// nullTime returns t as a query argument, or NULL for the zero time.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return dbTime(t)
}

// scannedTime returns a scanned nullable timestamp in UTC; NULL is the zero
// time.
func scannedTime(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// nullJSON returns a JSON value as a query argument, or NULL when it is
// empty. It fails if the value is not valid JSON.
func nullJSON(what string, v json.RawMessage) (any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if !json.Valid(v) {
		return nil, fmt.Errorf("%s is not valid JSON", what)
	}
	return string(v), nil
}

// rawJSON returns a scanned nullable JSON text; NULL is nil.
func rawJSON(s *string) json.RawMessage {
	if s == nil || *s == "" {
		return nil
	}
	return json.RawMessage(*s)
}

// notFound is the error for a missing run.
func notFound(id string) error {
	return fmt.Errorf("run %q: %w", id, madspark.ErrNotFound)
}

// CreateRun stores a new run. run.ID must be set and not used yet. A zero
// run.CreatedAt is set to the current time (truncated to microseconds) and
// an empty run.Status to madspark.RunRunning, in *run as well as in the
// store.
func (db *DB) CreateRun(ctx context.Context, run *madspark.Run) error {
	return createRun(ctx, db.pool, "create run", run)
}

// querier runs statements: the pool, or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// createRun stores run through q.
func createRun(ctx context.Context, q querier, op string, run *madspark.Run) error {
	if run == nil || run.ID == "" {
		return fmt.Errorf("postgres: %s: run ID is empty", op)
	}
	params, err := nullJSON("params", run.Params)
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, run.ID, err)
	}
	result, err := nullJSON("result", run.Result)
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, run.ID, err)
	}
	if run.CreatedAt.IsZero() {
		run.CreatedAt = dbTime(time.Now())
	}
	if run.Status == "" {
		run.Status = madspark.RunRunning
	}
	tags, err := json.Marshal(run.Tags)
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, run.ID, err)
	}
	_, err = q.Exec(ctx, `INSERT INTO runs
    (id, pipeline, status, mode, provider, model, params, result, error, usage, tags, created_at, finished_at, subject)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		run.ID, run.Pipeline, string(run.Status), run.Mode, run.Provider, run.Model,
		params, result, run.Error, run.Usage, string(tags), dbTime(run.CreatedAt), nullTime(run.FinishedAt), run.Subject)
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, run.ID, err)
	}
	return nil
}

// StartRun is CreateRun of run and TakeRunLease of it for l, in one
// transaction: both or neither.
func (db *DB) StartRun(ctx context.Context, run *madspark.Run, l *madspark.RunLease, ttl time.Duration) error {
	const op = "start run"
	return db.atomically(ctx, op, func(tx pgx.Tx) error {
		if err := createRun(ctx, tx, op, run); err != nil {
			return err
		}
		return takeRunLease(ctx, tx, op, l, ttl)
	})
}

// EndRun is FinishRun of run, AppendEvent of final and DropRunLease of l,
// in one transaction: all or none. final and l may be nil.
func (db *DB) EndRun(ctx context.Context, run *madspark.Run, l *madspark.RunLease, final *madspark.Event) error {
	const op = "end run"
	return db.atomically(ctx, op, func(tx pgx.Tx) error {
		if err := finishRun(ctx, tx, op, run); err != nil {
			return err
		}
		if final != nil {
			if err := appendEvent(ctx, tx, op, final); err != nil {
				return err
			}
		}
		if l != nil {
			return dropRunLease(ctx, tx, l)
		}
		return nil
	})
}

// FinishRun records run's final Status, Result, Error, Usage and FinishedAt;
// the other fields are left as they were stored. A zero run.FinishedAt is
// set to the current time (truncated to microseconds), in *run as well as in
// the store. It returns an error wrapping madspark.ErrNotFound if there is
// no run with run.ID.
func (db *DB) FinishRun(ctx context.Context, run *madspark.Run) error {
	return finishRun(ctx, db.pool, "finish run", run)
}

// finishRun records run's outcome through q.
func finishRun(ctx context.Context, q querier, op string, run *madspark.Run) error {
	if run == nil || run.ID == "" {
		return fmt.Errorf("postgres: %s: run ID is empty", op)
	}
	result, err := nullJSON("result", run.Result)
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, run.ID, err)
	}
	if run.FinishedAt.IsZero() {
		run.FinishedAt = dbTime(time.Now())
	}
	tag, err := q.Exec(ctx, `UPDATE runs
SET status = $1, result = $2, error = $3, usage = $4, finished_at = $5
WHERE id = $6`,
		string(run.Status), result, run.Error, run.Usage, nullTime(run.FinishedAt), run.ID)
	if err != nil {
		return fmt.Errorf("postgres: %s %q: %w", op, run.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound(run.ID)
	}
	return nil
}

// runColumns are the columns scanRun reads, in order.
const runColumns = `id, pipeline, status, mode, provider, model, params, result, error, usage, tags, created_at, finished_at, subject`

// scanRun reads a row of runColumns.
func scanRun(row pgx.Row) (*madspark.Run, error) {
	var (
		r                 madspark.Run
		status, tags      string
		params, result    *string
		created, finished pgtype.Timestamptz
	)
	if err := row.Scan(&r.ID, &r.Pipeline, &status, &r.Mode, &r.Provider, &r.Model,
		&params, &result, &r.Error, &r.Usage, &tags, &created, &finished, &r.Subject); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(tags), &r.Tags); err != nil {
		return nil, fmt.Errorf("run %q: tags: %w", r.ID, err)
	}
	if len(r.Tags) == 0 {
		r.Tags = nil
	}
	r.Status = madspark.RunStatus(status)
	r.Params = rawJSON(params)
	r.Result = rawJSON(result)
	r.CreatedAt = scannedTime(created)
	r.FinishedAt = scannedTime(finished)
	return &r, nil
}

// Run returns the run with the given ID, or an error wrapping
// madspark.ErrNotFound if there is none.
func (db *DB) Run(ctx context.Context, id string) (*madspark.Run, error) {
	r, err := scanRun(db.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: run %q: %w", id, err)
	}
	return r, nil
}

// Runs lists the runs that match f, newest first (runs created at the same
// instant are ordered by descending ID, compared byte-wise). f.Limit of 0
// or less means 50, and it is capped at 1000. The result is empty, not nil,
// when nothing matches.
func (db *DB) Runs(ctx context.Context, f madspark.RunFilter) ([]*madspark.Run, error) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Pipeline != "" {
		where = append(where, "pipeline = "+arg(f.Pipeline))
	}
	if f.Status != "" {
		where = append(where, "status = "+arg(string(f.Status)))
	}
	if f.Query != "" {
		// ILIKE would fold more than ASCII; LIKE on lower() of both sides
		// folds what SQLite's LIKE folds, and more.
		where = append(where, `lower(params) LIKE lower(`+arg("%"+likeEscape(f.Query)+"%")+`) ESCAPE '\'`)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	limit = min(limit, maxLimit)
	offset := max(f.Offset, 0)

	q := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ` + arg(int64(limit)) + ` OFFSET ` + arg(int64(offset))

	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	defer rows.Close()
	runs := []*madspark.Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	return runs, nil
}

// SaveStep writes step into the journal of run step.RunID, replacing any
// earlier entry with the same key. A replaced step keeps its place in the
// order of Steps. While the run is queued or running, its usage becomes
// the sum of its steps' usage, in the same transaction. It returns an
// error wrapping madspark.ErrNotFound if the run does not exist.
func (db *DB) SaveStep(ctx context.Context, step *madspark.Step) error {
	const op = "save step"
	if step == nil || step.RunID == "" || step.Key == "" {
		return fmt.Errorf("postgres: %s: run ID or key is empty", op)
	}
	output, err := nullJSON("output", step.Output)
	if err != nil {
		return fmt.Errorf("postgres: %s %q of run %q: %w", op, step.Key, step.RunID, err)
	}
	repairs, err := repairsJSON(step.Repairs)
	if err != nil {
		return fmt.Errorf("postgres: %s %q of run %q: %w", op, step.Key, step.RunID, err)
	}
	calls := "[]"
	if len(step.Calls) > 0 {
		b, err := json.Marshal(step.Calls)
		if err != nil {
			return fmt.Errorf("postgres: %s %q of run %q: encode calls: %w", op, step.Key, step.RunID, err)
		}
		calls = string(b)
	}
	return db.inTx(ctx, op, func(tx pgx.Tx) error {
		// Lock the run's row, so that the steps of one run are saved one
		// at a time and MAX(seq)+1 below is unique. FOR NO KEY UPDATE
		// does not block the foreign-key checks of other transactions
		// (FOR KEY SHARE). The insert is a separate statement, so that
		// under READ COMMITTED it sees the steps committed by whoever
		// held the lock before.
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM runs WHERE id = $1 FOR NO KEY UPDATE`, step.RunID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(step.RunID)
		}
		if err != nil {
			return fmt.Errorf("%q of run %q: %w", step.Key, step.RunID, err)
		}
		// On conflict the existing seq is kept.
		_, err = tx.Exec(ctx, `INSERT INTO steps
    (run_id, key, input_hash, status, output, error, usage, started_at, finished_at, repairs, calls, seq)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
    (SELECT COALESCE(MAX(seq), 0) + 1 FROM steps WHERE run_id = $1))
ON CONFLICT (run_id, key) DO UPDATE SET
    input_hash = excluded.input_hash,
    status = excluded.status,
    output = excluded.output,
    error = excluded.error,
    usage = excluded.usage,
    started_at = excluded.started_at,
    finished_at = excluded.finished_at,
    repairs = excluded.repairs,
    calls = excluded.calls`,
			step.RunID, step.Key, step.InputHash, string(step.Status), output, step.Error, step.Usage,
			nullTime(step.StartedAt), nullTime(step.FinishedAt), repairs, calls)
		if err != nil {
			return fmt.Errorf("%q of run %q: %w", step.Key, step.RunID, err)
		}
		if err := sumStepUsage(ctx, tx, step.RunID); err != nil {
			return fmt.Errorf("%q of run %q: %w", step.Key, step.RunID, err)
		}
		return nil
	})
}

// sumStepUsage sets the usage of run id, if it is queued or running, to
// the sum of its steps'.
func sumStepUsage(ctx context.Context, tx pgx.Tx, id string) error {
	rows, err := tx.Query(ctx, `SELECT usage FROM steps WHERE run_id = $1`, id)
	if err != nil {
		return fmt.Errorf("usage of its steps: %w", err)
	}
	usages, err := pgx.CollectRows(rows, pgx.RowTo[llm.Usage])
	if err != nil {
		return fmt.Errorf("usage of its steps: %w", err)
	}
	var sum llm.Usage
	for _, u := range usages {
		sum.Add(u)
	}
	if _, err := tx.Exec(ctx, `UPDATE runs SET usage = $2 WHERE id = $1 AND status IN ('queued', 'running')`, id, sum); err != nil {
		return fmt.Errorf("run usage: %w", err)
	}
	return nil
}

// Steps returns the steps of run runID in the order they were first saved.
// The result is empty, not nil, when the run has no steps or does not exist.
func (db *DB) Steps(ctx context.Context, runID string) ([]*madspark.Step, error) {
	rows, err := db.pool.Query(ctx, `SELECT
    run_id, key, input_hash, status, output, error, usage, started_at, finished_at, repairs, calls
FROM steps WHERE run_id = $1 ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("postgres: steps of run %q: %w", runID, err)
	}
	defer rows.Close()
	steps := []*madspark.Step{}
	for rows.Next() {
		var (
			s                 madspark.Step
			status            string
			output            *string
			started, finished pgtype.Timestamptz
			repairs           string
			calls             string
		)
		if err := rows.Scan(&s.RunID, &s.Key, &s.InputHash, &status, &output, &s.Error, &s.Usage,
			&started, &finished, &repairs, &calls); err != nil {
			return nil, fmt.Errorf("postgres: steps of run %q: %w", runID, err)
		}
		if calls != "" && calls != "[]" {
			if err := json.Unmarshal([]byte(calls), &s.Calls); err != nil {
				return nil, fmt.Errorf("postgres: steps of run %q: step %q: decode calls: %w", runID, s.Key, err)
			}
			for i := range s.Calls {
				s.Calls[i].StartedAt = s.Calls[i].StartedAt.UTC()
			}
		}
		s.Status = madspark.StepStatus(status)
		s.Output = rawJSON(output)
		if err := json.Unmarshal([]byte(repairs), &s.Repairs); err != nil {
			return nil, fmt.Errorf("postgres: steps of run %q: step %q: repairs: %w", runID, s.Key, err)
		}
		s.StartedAt = scannedTime(started)
		s.FinishedAt = scannedTime(finished)
		steps = append(steps, &s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: steps of run %q: %w", runID, err)
	}
	return steps, nil
}

// SetRunStatus moves run id to status, which must be queued or running,
// clearing its error and finish time, provided its current status is one of
// from (any status when from is empty). It reports whether it did, and
// returns an error wrapping madspark.ErrNotFound when there is no such run.
func (db *DB) SetRunStatus(ctx context.Context, id string, status madspark.RunStatus, from ...madspark.RunStatus) (bool, error) {
	const op = "set run status"
	if status != madspark.RunQueued && status != madspark.RunRunning {
		return false, fmt.Errorf("postgres: %s %q: %q is not an unfinished status", op, id, status)
	}
	allowed := make([]string, 0, len(from))
	for _, s := range from {
		allowed = append(allowed, string(s))
	}
	var (
		cur     string
		changed bool
	)
	// One statement: the row is locked by the UPDATE, and the status
	// compared under the lock; cur is the status before the update.
	err := db.pool.QueryRow(ctx, `WITH old AS (SELECT id, status FROM runs WHERE id = $1 FOR NO KEY UPDATE),
upd AS (
    UPDATE runs SET status = $2, error = '', finished_at = NULL
    FROM old WHERE runs.id = old.id AND (cardinality($3::text[]) = 0 OR old.status = ANY($3::text[]))
    RETURNING runs.id
)
SELECT old.status, EXISTS (SELECT 1 FROM upd) FROM old`, id, string(status), allowed).Scan(&cur, &changed)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, notFound(id)
	}
	if err != nil {
		return false, fmt.Errorf("postgres: %s %q: %w", op, id, err)
	}
	return changed, nil
}

// likeEscape escapes the wildcards of LIKE in s, with \ as the escape
// character.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// repairsJSON encodes a step's repairs for the repairs column; none is "[]".
func repairsJSON(r []llm.Repair) (string, error) {
	if len(r) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("repairs: %w", err)
	}
	return string(b), nil
}
