package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// CreateRun stores a new run. run.ID must be set and not used yet. A zero
// run.CreatedAt is set to the current time and an empty run.Status to
// madspark.RunRunning, in *run as well as in the store.
func (s *Store) CreateRun(ctx context.Context, run *madspark.Run) error {
	const op = "create run"
	create, err := s.createRun(ctx, op, run)
	if err != nil {
		return err
	}
	return s.write(ctx, op, create)
}

// createRun checks and encodes run, and returns the write that stores it.
func (s *Store) createRun(ctx context.Context, op string, run *madspark.Run) (func(tx *Tx) error, error) {
	if run == nil || run.ID == "" {
		return nil, s.fail(errors.New("run ID is empty"), "%s", op)
	}
	params, err := jsonArg("params", run.Params)
	var result any
	var usage, tags string
	if err == nil {
		result, err = jsonArg("result", run.Result)
	}
	if err == nil {
		usage, err = encode("usage", run.Usage)
	}
	if err == nil {
		tags, err = encode("tags", run.Tags)
	}
	if err != nil {
		return nil, s.fail(err, "%s %q", op, run.ID)
	}
	if run.CreatedAt.IsZero() {
		run.CreatedAt = s.now()
	}
	if run.Status == "" {
		run.Status = madspark.RunRunning
	}
	return func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs
    (id, pipeline, status, mode, provider, model, params, result, error, usage, tags, created_at, finished_at, subject)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			run.ID, run.Pipeline, string(run.Status), run.Mode, run.Provider, run.Model,
			params, result, run.Error, usage, tags, s.d.Time(run.CreatedAt), s.nullTime(run.FinishedAt), run.Subject)
		if err != nil {
			return fmt.Errorf("%q: %w", run.ID, err)
		}
		return nil
	}, nil
}

// StartRun is CreateRun of run and TakeRunLease of it for l, in one
// write: both or neither.
func (s *Store) StartRun(ctx context.Context, run *madspark.Run, l *madspark.RunLease, ttl time.Duration) error {
	const op = "start run"
	create, err := s.createRun(ctx, op, run)
	if err != nil {
		return err
	}
	take, err := s.takeRunLease(ctx, op, l, ttl)
	if err != nil {
		return err
	}
	return s.write(ctx, op, func(tx *Tx) error {
		if err := create(tx); err != nil {
			return err
		}
		if s.d.Clock == "" {
			// Leases timed by this process's clock: the lease of a run
			// created in this write is inserted without reading what
			// is there first, unless something is.
			if ok, err := s.newRunLease(ctx, tx, l, ttl); ok || err != nil {
				return err
			}
		}
		return take(tx)
	})
}

// newRunLease inserts l, for ttl from now by this process's clock, unless
// the run has a lease already; it reports whether it did.
func (s *Store) newRunLease(ctx context.Context, tx *Tx, l *madspark.RunLease, ttl time.Duration) (bool, error) {
	now := s.now()
	expires := s.kept(now.Add(ttl))
	n, err := affected(tx.ExecContext(ctx, `INSERT INTO run_leases (run_id, token, holder, host, pid, started_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id) DO NOTHING`,
		l.RunID, l.Token, l.Holder, l.Host, l.PID, s.d.Time(now), s.d.Time(expires)))
	if err != nil {
		return false, fmt.Errorf("%q: %w", l.RunID, err)
	}
	if n == 0 {
		return false, nil
	}
	l.StartedAt, l.ExpiresAt, l.Expired = now, expires, false
	return true, nil
}

// EndRun is SaveStep of each of steps, AppendEvent of each of events in
// order (setting their Seq), FinishRun of run and DropRunLease of l, in
// one write: all or none. l may be nil.
func (s *Store) EndRun(ctx context.Context, run *madspark.Run, l *madspark.RunLease, steps []*madspark.Step, events ...*madspark.Event) error {
	const op = "end run"
	finish, err := s.finishRun(ctx, op, run)
	if err != nil {
		return err
	}
	writes := make([]func(tx *Tx) error, 0, len(steps)+len(events)+2)
	for _, step := range steps {
		save, err := s.stepWrite(ctx, op, step, false)
		if err != nil {
			return err
		}
		writes = append(writes, save)
	}
	for _, e := range events {
		add, err := s.appendEvent(ctx, op, e)
		if err != nil {
			return err
		}
		writes = append(writes, add)
	}
	writes = append(writes, finish)
	if l != nil {
		writes = append(writes, func(tx *Tx) error { return dropRunLease(ctx, tx, l) })
	}
	// Nothing waits for a run's end but the end of its answer: its write
	// may wait a moment for others to commit with.
	return s.write(mayWait(ctx), op, func(tx *Tx) error {
		for _, w := range writes {
			if err := w(tx); err != nil {
				return err
			}
		}
		return nil
	})
}

// FinishRun records run's final Status, Result, Error, Usage and FinishedAt;
// the other fields are left as they were stored. A zero run.FinishedAt is
// set to the current time, in *run as well as in the store. It returns an
// error wrapping madspark.ErrNotFound if there is no run with run.ID.
func (s *Store) FinishRun(ctx context.Context, run *madspark.Run) error {
	const op = "finish run"
	finish, err := s.finishRun(ctx, op, run)
	if err != nil {
		return err
	}
	return s.write(ctx, op, finish)
}

// finishRun checks and encodes run's outcome, and returns the write that
// records it.
func (s *Store) finishRun(ctx context.Context, op string, run *madspark.Run) (func(tx *Tx) error, error) {
	if run == nil || run.ID == "" {
		return nil, s.fail(errors.New("run ID is empty"), "%s", op)
	}
	result, err := jsonArg("result", run.Result)
	if err != nil {
		return nil, s.fail(err, "%s %q", op, run.ID)
	}
	usage, err := encode("usage", run.Usage)
	if err != nil {
		return nil, s.fail(err, "%s %q", op, run.ID)
	}
	if run.FinishedAt.IsZero() {
		run.FinishedAt = s.now()
	}
	return func(tx *Tx) error {
		return one(tx.ExecContext(ctx, `UPDATE runs SET status = $1, result = $2, error = $3, usage = $4, finished_at = $5 WHERE id = $6`,
			string(run.Status), result, run.Error, usage, s.nullTime(run.FinishedAt), run.ID))("run", run.ID)
	}, nil
}

// runColumns are the columns scanRun reads, in order.
const runColumns = `id, pipeline, status, mode, provider, model, params, result, error, usage, tags, created_at, finished_at, subject`

// scanRun reads a row of runColumns.
func scanRun(row scanner) (*madspark.Run, error) {
	var r madspark.Run
	if err := row.Scan(&r.ID, &r.Pipeline, &r.Status, &r.Mode, &r.Provider, &r.Model, raw{&r.Params}, raw{&r.Result},
		&r.Error, decoded{&r.Usage}, decoded{&r.Tags}, at{&r.CreatedAt}, at{&r.FinishedAt}, &r.Subject); err != nil {
		return nil, err
	}
	if len(r.Tags) == 0 {
		r.Tags = nil
	}
	return &r, nil
}

// Run returns the run with the given ID, or an error wrapping
// madspark.ErrNotFound if there is none.
func (s *Store) Run(ctx context.Context, id string) (*madspark.Run, error) {
	return byID(ctx, s, scanRun, "run", `SELECT `+runColumns+` FROM runs WHERE id = $1`, id)
}

// Runs lists the runs that match f, newest first (runs created at the same
// instant are ordered by descending ID, compared byte-wise). f.Limit of 0
// or less means 50, and it is capped at 1000. The result is empty, not nil,
// when nothing matches.
func (s *Store) Runs(ctx context.Context, f madspark.RunFilter) ([]*madspark.Run, error) {
	var w where
	if f.Pipeline != "" {
		w.add("pipeline = ?", f.Pipeline)
	}
	if f.Status != "" {
		w.add("status = ?", string(f.Status))
	}
	if f.Query != "" {
		// lower() on both sides folds what SQLite's LIKE folds.
		w.add(`lower(params) LIKE lower(?) ESCAPE '\'`, likeArg(f.Query))
	}
	q := `SELECT ` + runColumns + ` FROM runs` + w.sql() + w.page(limit(f.Limit, defaultLimit), f.Offset)
	runs, err := all(ctx, s.read, scanRun, q, w.args...)
	return runs, s.fail(err, "list runs")
}

// where builds a WHERE clause and its arguments.
type where struct {
	conds []string
	args  []any
}

// add adds a condition in which ? stands for arg.
func (w *where) add(cond string, arg any) {
	w.args = append(w.args, arg)
	w.conds = append(w.conds, strings.ReplaceAll(cond, "?", fmt.Sprintf("$%d", len(w.args))))
}

// sql returns the clause; empty for no condition.
func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return ` WHERE ` + strings.Join(w.conds, " AND ")
}

// page returns the ORDER BY, LIMIT and OFFSET of a page of runs or
// bookmarks, newest first.
func (w *where) page(limit, offset int) string {
	w.args = append(w.args, limit, max(offset, 0))
	return fmt.Sprintf(` ORDER BY created_at DESC, id DESC LIMIT $%d OFFSET $%d`, len(w.args)-1, len(w.args))
}

// SaveStep writes step into the journal of run step.RunID, replacing any
// earlier entry with the same key. A replaced step keeps its place in the
// order of Steps. While the run is queued or running, its usage becomes
// the sum of its steps' usage, in the same transaction. It returns an
// error wrapping madspark.ErrNotFound if the run does not exist.
func (s *Store) SaveStep(ctx context.Context, step *madspark.Step) error {
	const op = "save step"
	save, err := s.stepWrite(ctx, op, step, true)
	if err != nil {
		return err
	}
	return s.write(ctx, op, save)
}

// stepWrite checks and encodes step, and returns the write that journals
// it; with sum, the write also sets the usage of the run, while it is
// unfinished, to the sum of its steps'.
func (s *Store) stepWrite(ctx context.Context, op string, step *madspark.Step, sum bool) (func(tx *Tx) error, error) {
	if step == nil || step.RunID == "" || step.Key == "" {
		return nil, s.fail(errors.New("run ID or key is empty"), "%s", op)
	}
	output, err := jsonArg("output", step.Output)
	var repairs, usage, calls string
	if err == nil {
		repairs, err = list("repairs", step.Repairs)
	}
	if err == nil {
		usage, err = encode("usage", step.Usage)
	}
	if err == nil {
		calls, err = list("calls", step.Calls)
	}
	if err != nil {
		return nil, s.fail(err, "%s %q of run %q", op, step.Key, step.RunID)
	}
	return func(tx *Tx) error { return s.saveStep(ctx, tx, step, output, repairs, usage, calls, sum) }, nil
}

// saveStep writes step, encoded, in tx; with sum, it sets the usage of the
// unfinished run to the sum of its steps'.
func (s *Store) saveStep(ctx context.Context, tx *Tx, step *madspark.Step, output any, repairs, usage, calls string, sum bool) error {
	// Holding the run's row makes the steps of one run save one at a
	// time, so that MAX(seq)+1 is unique; the insert is a statement of its
	// own, to see the steps saved by whoever held the row before. On
	// conflict the step keeps its seq.
	if err := s.lockRun(ctx, tx, step.RunID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO steps
    (run_id, key, input_hash, status, output, error, usage, started_at, finished_at, repairs, calls, seq)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, (SELECT COALESCE(MAX(seq), 0) + 1 FROM steps WHERE run_id = $1))
ON CONFLICT (run_id, key) DO UPDATE SET input_hash = excluded.input_hash, status = excluded.status,
    output = excluded.output, error = excluded.error, usage = excluded.usage, started_at = excluded.started_at,
    finished_at = excluded.finished_at, repairs = excluded.repairs, calls = excluded.calls`,
		step.RunID, step.Key, step.InputHash, string(step.Status), output, step.Error, usage,
		s.nullTime(step.StartedAt), s.nullTime(step.FinishedAt), repairs, calls); err != nil {
		return fmt.Errorf("%q of run %q: %w", step.Key, step.RunID, err)
	}
	if !sum {
		return nil
	}
	// The run's usage is the sum of its steps' while it is unfinished.
	usages, err := all(ctx, tx, func(row scanner) (u llm.Usage, err error) {
		return u, row.Scan(decoded{&u})
	}, `SELECT usage FROM steps WHERE run_id = $1`, step.RunID)
	if err != nil {
		return fmt.Errorf("%q of run %q: usage of its steps: %w", step.Key, step.RunID, err)
	}
	var total llm.Usage
	for _, u := range usages {
		total.Add(u)
	}
	enc, err := encode("usage", total)
	if err == nil {
		_, err = tx.ExecContext(ctx, `UPDATE runs SET usage = $1 WHERE id = $2 AND status IN ('queued', 'running')`, enc, step.RunID)
	}
	if err != nil {
		return fmt.Errorf("%q of run %q: run usage: %w", step.Key, step.RunID, err)
	}
	return nil
}

// Steps returns the steps of run runID in the order they were first saved.
// The result is empty, not nil, when the run has no steps or does not exist.
func (s *Store) Steps(ctx context.Context, runID string) ([]*madspark.Step, error) {
	steps, err := all(ctx, s.read, func(row scanner) (*madspark.Step, error) {
		var st madspark.Step
		if err := row.Scan(&st.RunID, &st.Key, &st.InputHash, &st.Status, raw{&st.Output}, &st.Error, decoded{&st.Usage},
			at{&st.StartedAt}, at{&st.FinishedAt}, decoded{&st.Repairs}, decoded{&st.Calls}); err != nil {
			return nil, fmt.Errorf("step %q: %w", st.Key, err)
		}
		if len(st.Calls) == 0 {
			st.Calls = nil
		}
		for i := range st.Calls {
			st.Calls[i].StartedAt = st.Calls[i].StartedAt.UTC()
		}
		return &st, nil
	}, `SELECT run_id, key, input_hash, status, output, error, usage, started_at, finished_at, repairs, calls
FROM steps WHERE run_id = $1 ORDER BY seq`, runID)
	return steps, s.fail(err, "steps of run %q", runID)
}

// SetRunStatus moves run id to status, which must be queued or running,
// clearing its error and finish time, provided its current status is one of
// from (any status when from is empty). It reports whether it did, and
// returns an error wrapping madspark.ErrNotFound when there is no such run.
func (s *Store) SetRunStatus(ctx context.Context, id string, status madspark.RunStatus, from ...madspark.RunStatus) (bool, error) {
	const op = "set run status"
	if status != madspark.RunQueued && status != madspark.RunRunning {
		return false, s.fail(fmt.Errorf("%q is not an unfinished status", status), "%s %q", op, id)
	}
	changed := false
	err := s.write(ctx, op, func(tx *Tx) error {
		changed = false
		var cur madspark.RunStatus
		err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = $1`+s.d.RowLock, id).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return missing("run", id)
		}
		if err != nil || (len(from) > 0 && !slices.Contains(from, cur)) {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE runs SET status = $1, error = '', finished_at = NULL WHERE id = $2`, string(status), id)
		changed = err == nil
		return err
	})
	return changed, err
}
