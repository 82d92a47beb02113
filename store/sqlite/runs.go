package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// Limits on RunFilter.Limit.
const (
	defaultLimit = 50
	maxLimit     = 1000
)

// timeFormat is RFC 3339 with a fixed nine-digit fraction. Times are stored
// in UTC in this form so that comparing the text compares the times (with
// time.RFC3339Nano, "...:05Z" would sort after "...:05.1Z").
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// formatTime returns t as stored text, in UTC.
func formatTime(t time.Time) string {
	return t.UTC().Format(timeFormat)
}

// nullTime returns t as stored text, or NULL for the zero time.
func nullTime(t time.Time) sql.NullString {
	if t.IsZero() {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(t), Valid: true}
}

// parseTime parses stored text; NULL is the zero time.
func parseTime(s sql.NullString) (time.Time, error) {
	if !s.Valid || s.String == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s.String)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// nullJSON returns a JSON value as stored text, or NULL when it is empty. It
// fails if the value is not valid JSON.
func nullJSON(what string, v json.RawMessage) (sql.NullString, error) {
	if len(v) == 0 {
		return sql.NullString{}, nil
	}
	if !json.Valid(v) {
		return sql.NullString{}, fmt.Errorf("%s is not valid JSON", what)
	}
	return sql.NullString{String: string(v), Valid: true}, nil
}

// rawJSON returns stored text as a JSON value; NULL is nil.
func rawJSON(s sql.NullString) json.RawMessage {
	if !s.Valid || s.String == "" {
		return nil
	}
	return json.RawMessage(s.String)
}

// usageJSON returns u as stored text.
func usageJSON(u llm.Usage) (string, error) {
	b, err := json.Marshal(u)
	if err != nil {
		return "", fmt.Errorf("encode usage: %w", err)
	}
	return string(b), nil
}

// callsJSON encodes the calls of a step for storage.
func callsJSON(calls []madspark.Call) (string, error) {
	if len(calls) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(calls)
	if err != nil {
		return "", fmt.Errorf("encode calls: %w", err)
	}
	return string(b), nil
}

// parseCalls decodes the stored calls of a step into *calls; none leaves
// it nil.
func parseCalls(s string, calls *[]madspark.Call) error {
	if s == "" || s == "[]" {
		return nil
	}
	if err := json.Unmarshal([]byte(s), calls); err != nil {
		return fmt.Errorf("decode calls: %w", err)
	}
	for i := range *calls {
		(*calls)[i].StartedAt = (*calls)[i].StartedAt.UTC()
	}
	return nil
}

// parseUsage decodes stored usage text.
func parseUsage(s string) (llm.Usage, error) {
	var u llm.Usage
	if s == "" {
		return u, nil
	}
	if err := json.Unmarshal([]byte(s), &u); err != nil {
		return u, fmt.Errorf("decode usage: %w", err)
	}
	return u, nil
}

// notFound is the error for a missing run.
func notFound(id string) error {
	return fmt.Errorf("run %q: %w", id, madspark.ErrNotFound)
}

// CreateRun stores a new run. run.ID must be set and not used yet. A zero
// run.CreatedAt is set to the current time and an empty run.Status to
// madspark.RunRunning, in *run as well as in the store.
func (db *DB) CreateRun(ctx context.Context, run *madspark.Run) error {
	const op = "create run"
	create, err := createRun(ctx, op, run)
	if err != nil {
		return err
	}
	return db.write(ctx, op, create)
}

// createRun checks and encodes run, and returns the write that stores it.
func createRun(ctx context.Context, op string, run *madspark.Run) (func(tx *sql.Tx) error, error) {
	if run == nil || run.ID == "" {
		return nil, fmt.Errorf("sqlite: %s: run ID is empty", op)
	}
	params, err := nullJSON("params", run.Params)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s %q: %w", op, run.ID, err)
	}
	result, err := nullJSON("result", run.Result)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s %q: %w", op, run.ID, err)
	}
	usage, err := usageJSON(run.Usage)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s %q: %w", op, run.ID, err)
	}
	if run.CreatedAt.IsZero() {
		run.CreatedAt = time.Now().UTC()
	}
	if run.Status == "" {
		run.Status = madspark.RunRunning
	}
	tags, err := tagsJSON(run.Tags)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s %q: %w", op, run.ID, err)
	}
	return func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs
    (id, pipeline, status, mode, provider, model, params, result, error, usage, tags, created_at, finished_at, subject)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			run.ID, run.Pipeline, string(run.Status), run.Mode, run.Provider, run.Model,
			params, result, run.Error, usage, tags, formatTime(run.CreatedAt), nullTime(run.FinishedAt), run.Subject)
		if err != nil {
			return fmt.Errorf("%q: %w", run.ID, err)
		}
		return nil
	}, nil
}

// StartRun is CreateRun of run and TakeRunLease of it for l, in one
// write: both or neither.
func (db *DB) StartRun(ctx context.Context, run *madspark.Run, l *madspark.RunLease, ttl time.Duration) error {
	const op = "start run"
	create, err := createRun(ctx, op, run)
	if err != nil {
		return err
	}
	take, err := takeRunLease(ctx, op, l, ttl)
	if err != nil {
		return err
	}
	return db.write(ctx, op, func(tx *sql.Tx) error {
		if err := create(tx); err != nil {
			return err
		}
		return take(tx)
	})
}

// EndRun is FinishRun of run, AppendEvent of final and DropRunLease of l,
// in one write: all or none. final and l may be nil.
func (db *DB) EndRun(ctx context.Context, run *madspark.Run, l *madspark.RunLease, final *madspark.Event) error {
	const op = "end run"
	finish, err := finishRun(ctx, op, run)
	if err != nil {
		return err
	}
	appendFinal := func(*sql.Tx) error { return nil }
	if final != nil {
		if appendFinal, err = appendEvent(ctx, op, final); err != nil {
			return err
		}
	}
	return db.write(ctx, op, func(tx *sql.Tx) error {
		if err := finish(tx); err != nil {
			return err
		}
		if err := appendFinal(tx); err != nil {
			return err
		}
		if l != nil {
			return dropRunLease(ctx, tx, l)
		}
		return nil
	})
}

// FinishRun records run's final Status, Result, Error, Usage and FinishedAt;
// the other fields are left as they were stored. A zero run.FinishedAt is
// set to the current time, in *run as well as in the store. It returns an
// error wrapping madspark.ErrNotFound if there is no run with run.ID.
func (db *DB) FinishRun(ctx context.Context, run *madspark.Run) error {
	const op = "finish run"
	finish, err := finishRun(ctx, op, run)
	if err != nil {
		return err
	}
	return db.write(ctx, op, finish)
}

// finishRun checks and encodes run's outcome, and returns the write that
// records it.
func finishRun(ctx context.Context, op string, run *madspark.Run) (func(tx *sql.Tx) error, error) {
	if run == nil || run.ID == "" {
		return nil, fmt.Errorf("sqlite: %s: run ID is empty", op)
	}
	result, err := nullJSON("result", run.Result)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s %q: %w", op, run.ID, err)
	}
	usage, err := usageJSON(run.Usage)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s %q: %w", op, run.ID, err)
	}
	if run.FinishedAt.IsZero() {
		run.FinishedAt = time.Now().UTC()
	}
	return func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs
SET status = ?, result = ?, error = ?, usage = ?, finished_at = ?
WHERE id = ?`,
			string(run.Status), result, run.Error, usage, nullTime(run.FinishedAt), run.ID)
		if err != nil {
			return fmt.Errorf("%q: %w", run.ID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("%q: %w", run.ID, err)
		}
		if n == 0 {
			return notFound(run.ID)
		}
		return nil
	}, nil
}

// runColumns are the columns scanRun reads, in order.
const runColumns = `id, pipeline, status, mode, provider, model, params, result, error, usage, tags, created_at, finished_at, subject`

// scanner is a *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanRun reads a row of runColumns.
func scanRun(s scanner) (*madspark.Run, error) {
	var (
		r                  madspark.Run
		status, usage      string
		tags               string
		params, result     sql.NullString
		created, finished  sql.NullString
		errCreated, errFin error
	)
	if err := s.Scan(&r.ID, &r.Pipeline, &status, &r.Mode, &r.Provider, &r.Model,
		&params, &result, &r.Error, &usage, &tags, &created, &finished, &r.Subject); err != nil {
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
	u, err := parseUsage(usage)
	if err != nil {
		return nil, fmt.Errorf("run %q: %w", r.ID, err)
	}
	r.Usage = u
	r.CreatedAt, errCreated = parseTime(created)
	r.FinishedAt, errFin = parseTime(finished)
	if err := errors.Join(errCreated, errFin); err != nil {
		return nil, fmt.Errorf("run %q: %w", r.ID, err)
	}
	return &r, nil
}

// Run returns the run with the given ID, or an error wrapping
// madspark.ErrNotFound if there is none.
func (db *DB) Run(ctx context.Context, id string) (*madspark.Run, error) {
	row := db.r.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id)
	r, err := scanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: run %q: %w", id, err)
	}
	return r, nil
}

// Runs lists the runs that match f, newest first (runs created at the same
// instant are ordered by descending ID). f.Limit of 0 or less means 50, and
// it is capped at 1000. The result is empty, not nil, when nothing matches.
func (db *DB) Runs(ctx context.Context, f madspark.RunFilter) ([]*madspark.Run, error) {
	var (
		where []string
		args  []any
	)
	if f.Pipeline != "" {
		where = append(where, "pipeline = ?")
		args = append(args, f.Pipeline)
	}
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.Query != "" {
		where = append(where, `params LIKE ? ESCAPE '\'`)
		args = append(args, "%"+likeEscape(f.Query)+"%")
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
	q += ` ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`
	args = append(args, limit, offset)

	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list runs: %w", err)
	}
	defer rows.Close()
	runs := []*madspark.Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list runs: %w", err)
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
		return fmt.Errorf("sqlite: %s: run ID or key is empty", op)
	}
	output, err := nullJSON("output", step.Output)
	if err != nil {
		return fmt.Errorf("sqlite: %s %q of run %q: %w", op, step.Key, step.RunID, err)
	}
	repairs, err := repairsJSON(step.Repairs)
	if err != nil {
		return fmt.Errorf("sqlite: %s %q of run %q: %w", op, step.Key, step.RunID, err)
	}
	usage, err := usageJSON(step.Usage)
	if err != nil {
		return fmt.Errorf("sqlite: %s %q of run %q: %w", op, step.Key, step.RunID, err)
	}
	calls, err := callsJSON(step.Calls)
	if err != nil {
		return fmt.Errorf("sqlite: %s %q of run %q: %w", op, step.Key, step.RunID, err)
	}
	return db.write(ctx, op, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx,
			`SELECT COUNT(*) FROM runs WHERE id = ?`, step.RunID).Scan(&n); err != nil {
			return fmt.Errorf("%q of run %q: %w", step.Key, step.RunID, err)
		}
		if n == 0 {
			return notFound(step.RunID)
		}
		// seq numbers the steps of a run in the order they were first
		// saved. MAX+1 is race-free because the transaction holds the
		// write lock from its start (BEGIN IMMEDIATE); on conflict the
		// existing seq is kept.
		_, err := tx.ExecContext(ctx, `INSERT INTO steps
    (run_id, key, input_hash, status, output, error, usage, started_at, finished_at, repairs, calls, seq)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
    (SELECT COALESCE(MAX(seq), 0) + 1 FROM steps WHERE run_id = ?))
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
			step.RunID, step.Key, step.InputHash, string(step.Status), output, step.Error, usage,
			nullTime(step.StartedAt), nullTime(step.FinishedAt), repairs, calls, step.RunID)
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
func sumStepUsage(ctx context.Context, tx *sql.Tx, id string) error {
	rows, err := tx.QueryContext(ctx, `SELECT usage FROM steps WHERE run_id = ?`, id)
	if err != nil {
		return fmt.Errorf("usage of its steps: %w", err)
	}
	defer rows.Close()
	var sum llm.Usage
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return fmt.Errorf("usage of its steps: %w", err)
		}
		u, err := parseUsage(text)
		if err != nil {
			return err
		}
		sum.Add(u)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("usage of its steps: %w", err)
	}
	usage, err := usageJSON(sum)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE runs SET usage = ? WHERE id = ? AND status IN ('queued', 'running')`, usage, id); err != nil {
		return fmt.Errorf("run usage: %w", err)
	}
	return nil
}

// Steps returns the steps of run runID in the order they were first saved.
// The result is empty, not nil, when the run has no steps or does not exist.
func (db *DB) Steps(ctx context.Context, runID string) ([]*madspark.Step, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT
    run_id, key, input_hash, status, output, error, usage, started_at, finished_at, repairs, calls
FROM steps WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: steps of run %q: %w", runID, err)
	}
	defer rows.Close()
	steps := []*madspark.Step{}
	for rows.Next() {
		var (
			s                 madspark.Step
			status, usage     string
			calls             string
			output            sql.NullString
			started, finished sql.NullString
			repairs           string
		)
		if err := rows.Scan(&s.RunID, &s.Key, &s.InputHash, &status, &output, &s.Error, &usage,
			&started, &finished, &repairs, &calls); err != nil {
			return nil, fmt.Errorf("sqlite: steps of run %q: %w", runID, err)
		}
		s.Status = madspark.StepStatus(status)
		s.Output = rawJSON(output)
		if err := json.Unmarshal([]byte(repairs), &s.Repairs); err != nil {
			return nil, fmt.Errorf("sqlite: steps of run %q: step %q: repairs: %w", runID, s.Key, err)
		}
		var errU, errS, errF error
		s.Usage, errU = parseUsage(usage)
		s.StartedAt, errS = parseTime(started)
		s.FinishedAt, errF = parseTime(finished)
		errC := parseCalls(calls, &s.Calls)
		if err := errors.Join(errU, errS, errF, errC); err != nil {
			return nil, fmt.Errorf("sqlite: steps of run %q: step %q: %w", runID, s.Key, err)
		}
		steps = append(steps, &s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: steps of run %q: %w", runID, err)
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
		return false, fmt.Errorf("sqlite: %s %q: %q is not an unfinished status", op, id, status)
	}
	changed := false
	err := db.write(ctx, op, func(tx *sql.Tx) error {
		var cur string
		err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, id).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		}
		if err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		if len(from) > 0 && !slices.Contains(from, madspark.RunStatus(cur)) {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, error = '', finished_at = NULL WHERE id = ?`,
			string(status), id); err != nil {
			return fmt.Errorf("%q: %w", id, err)
		}
		changed = true
		return nil
	})
	return changed, err
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
