package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/proc"
)

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start starts working jobs, if Config.Concurrency is positive: it takes
// a lease for this worker, gives back to the queue at once the jobs of
// workers that died (so a restarted server resumes its runs without
// waiting), then starts River, the loop that renews the lease, and the loop
// that rescues the jobs of workers lost later. It returns once working has
// begun.
func (q *Queue) Start(ctx context.Context) error {
	if q.cfg.Concurrency == 0 {
		return errors.New("jobs: start: this queue only enqueues (Concurrency is 0)")
	}
	if q.started {
		return errors.New("jobs: start: already started")
	}
	q.mu.Lock()
	q.draining = false
	q.mu.Unlock()
	g, err := q.takeLease(ctx)
	if err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	if err := q.rescue(ctx); err != nil {
		q.logger.Warn("could not rescue the jobs of lost workers", "err", err)
	}
	if err := q.startWorking(ctx, g); err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	loop, stop := context.WithCancel(context.Background())
	q.stop, q.started = stop, true
	q.wg.Add(2)
	go func() {
		defer q.wg.Done()
		q.keepLease(loop)
	}()
	go func() {
		defer q.wg.Done()
		// Lost workers are looked for every third of a lease, and at
		// least every two seconds (a dead process on this machine is
		// noticed by that, not by its lease).
		tick := q.cfg.Clock.NewTicker(min(q.cfg.LeaseTTL/3, 2*time.Second))
		defer tick.Stop()
		for {
			select {
			case <-loop.Done():
				return
			case <-tick.Chan():
			}
			if err := q.rescue(loop); err != nil && loop.Err() == nil {
				q.logger.Warn("could not rescue the jobs of lost workers", "err", err)
			}
		}
	}()
	q.logger.Info("worker started", "worker", g.id, "queue", q.cfg.Provider, "concurrency", q.cfg.Concurrency)
	return nil
}

// takeLease takes a new lease, under a new worker ID, with the River client
// that will work under it, and makes it the current one.
func (q *Queue) takeLease(ctx context.Context) (*generation, error) {
	q.mu.Lock()
	id := q.id
	if q.leases > 0 {
		id = fmt.Sprintf("%s-%d", q.id, q.leases)
	}
	q.leases++
	q.mu.Unlock()
	g := &generation{id: id, lease: madspark.WorkerLease{ID: id, Host: q.host, PID: os.Getpid()}}
	c, err := q.workClient(id, &runWorker{q: q, g: g})
	if err != nil {
		return nil, err
	}
	g.client = c
	start := q.cfg.Clock.Now()
	if err := q.cfg.Store.RenewLease(ctx, &g.lease, q.cfg.LeaseTTL); err != nil {
		return nil, err
	}
	g.deadline = start.Add(q.cfg.LeaseTTL)
	// From now on the rescue counts the lease as this worker's own.
	q.mu.Lock()
	if q.draining {
		q.mu.Unlock()
		q.dropLease(g.id)
		return nil, errors.New("the worker is stopping")
	}
	q.cur = g
	q.mu.Unlock()
	return g, nil
}

// startWorking starts the client of g, the current generation; on failure
// its lease is dropped.
func (q *Queue) startWorking(ctx context.Context, g *generation) error {
	// River's services run until Stop, not until ctx is done.
	if err := g.client.Start(context.WithoutCancel(ctx)); err != nil {
		q.mu.Lock()
		q.cur = nil
		q.mu.Unlock()
		q.dropLease(g.id)
		return err
	}
	return nil
}

func (q *Queue) dropLease(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := q.cfg.Store.DropLease(ctx, id); err != nil {
		q.logger.Warn("could not drop a worker lease", "worker", id, "err", err)
	}
}

// keepLease renews the current lease every third of its life until loop is
// done. A lease that cannot be renewed before it may have expired, or that
// the database no longer holds (it expired and another worker took its
// runs), is lost: see loseLease. Without a lease, a new one is taken on
// every tick.
func (q *Queue) keepLease(loop context.Context) {
	clock := q.cfg.Clock
	tick := clock.NewTicker(q.cfg.LeaseTTL / 3)
	defer tick.Stop()
	for {
		q.mu.Lock()
		g := q.cur
		q.mu.Unlock()
		var (
			expiry <-chan time.Time
			timer  clockwork.Timer
		)
		if g != nil {
			timer = clock.NewTimer(clock.Until(g.deadline))
			expiry = timer.Chan()
		}
		select {
		case <-loop.Done():
		case <-tick.Chan():
		case <-expiry:
		}
		if timer != nil {
			timer.Stop()
		}
		if loop.Err() != nil {
			return
		}
		if g == nil {
			q.retakeLease(loop)
			continue
		}
		start := clock.Now()
		// The database call is bounded in real time (a fake clock's
		// context would reach the driver).
		rctx, cancel := context.WithTimeout(loop, clock.Until(g.deadline))
		err := q.cfg.Store.ExtendLease(rctx, &g.lease, q.cfg.LeaseTTL)
		cancel()
		switch {
		case err == nil:
			g.deadline = start.Add(q.cfg.LeaseTTL)
		case loop.Err() != nil:
			return
		case errors.Is(err, madspark.ErrLeaseLost) || !clock.Now().Before(g.deadline):
			q.loseLease(g, err)
			q.retakeLease(loop)
		default:
			q.logger.Warn("could not renew the worker's lease; will try again", "worker", g.id, "err", err, "expires_in", clock.Until(g.deadline).Round(time.Millisecond))
		}
	}
}

// loseLease stops working under g, whose lease lapsed: another worker may
// have taken its runs, or may soon. The runs still going are stopped
// without recording an outcome, and those that no other worker took yet
// are handed back to the queue (runWorker.Work).
func (q *Queue) loseLease(g *generation, why error) {
	q.mu.Lock()
	if q.cur != g {
		q.mu.Unlock()
		return
	}
	q.cur = nil
	q.mu.Unlock()
	g.lost.Store(true)
	q.logger.Error("the worker's lease lapsed; its runs are stopped and left to the queue", "worker", g.id, "err", why)
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.LeaseTTL+5*time.Second)
	defer cancel()
	if err := g.client.StopAndCancel(ctx); err != nil {
		q.logger.Warn("could not stop the worker of a lapsed lease", "worker", g.id, "err", err)
	}
	q.dropLease(g.id)
}

// retakeLease takes a new lease, unless the worker is stopping.
func (q *Queue) retakeLease(loop context.Context) {
	q.mu.Lock()
	skip := q.draining || q.cur != nil
	q.mu.Unlock()
	if skip {
		return
	}
	g, err := q.takeLease(loop)
	if err == nil {
		err = q.startWorking(loop, g)
	}
	if err != nil {
		if loop.Err() == nil {
			q.logger.Warn("could not take a new worker lease; will try again", "err", err)
		}
		return
	}
	q.logger.Info("worker started under a new lease", "worker", g.id)
}

// Stop drains the worker: it takes no new job and waits for the running
// ones to finish. If ctx is done first, the running jobs are cancelled and
// their runs go back to the queue at once, to be resumed by the next worker
// without paying again for their finished steps: as queued, or as
// interrupted when the cause of ctx's end wraps madspark.ErrInterrupted
// (the process is stopping). Then the lease is dropped.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.started {
		return nil
	}
	q.mu.Lock()
	q.draining = true
	g := q.cur
	q.mu.Unlock()
	var err error
	if g != nil {
		// The lease is still renewed while the runs finish.
		err = g.client.Stop(ctx)
		if err != nil && ctx.Err() != nil {
			g.interrupted.Store(errors.Is(context.Cause(ctx), madspark.ErrInterrupted))
			g.hard.Store(true)
			hctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = g.client.StopAndCancel(hctx)
			cancel()
		}
	}
	q.stop()
	q.wg.Wait()
	q.mu.Lock()
	g, q.cur = q.cur, nil
	q.mu.Unlock()
	if g != nil {
		q.dropLease(g.id)
	}
	q.started = false
	if err != nil {
		return fmt.Errorf("jobs: stop: %w", err)
	}
	return nil
}

// rescue gives back to the queue the running jobs of workers that are gone:
// their lease expired or was dropped, or they ran on this machine and their
// process is no longer alive. The runs are recorded as queued again (or
// cancelled, if a cancellation was asked for), and the leases of gone
// workers are dropped.
func (q *Queue) rescue(ctx context.Context) error {
	leases, err := q.cfg.Store.Leases(ctx)
	if err != nil {
		return err
	}
	q.mu.Lock()
	alive := map[string]bool{}
	if q.cur != nil {
		alive[q.cur.id] = true
	}
	q.mu.Unlock()
	var gone []string
	for _, l := range leases {
		if alive[l.ID] {
			continue
		}
		if l.Expired || q.deadHere(l) {
			gone = append(gone, l.ID)
			continue
		}
		alive[l.ID] = true
	}
	var errs []error
	params := river.NewJobListParams().Kinds(Kind).States(rivertype.JobStateRunning).First(1000)
	for {
		res, err := q.client.JobList(ctx, params)
		if err != nil {
			return err
		}
		for _, job := range res.Jobs {
			if len(job.AttemptedBy) == 0 || alive[job.AttemptedBy[len(job.AttemptedBy)-1]] {
				continue
			}
			// One job that cannot be rescued does not hold up the others.
			if _, err := q.rescueJob(ctx, job, ""); err != nil {
				errs = append(errs, err)
			}
		}
		if len(res.Jobs) < 1000 {
			break
		}
		params = params.After(res.LastCursor)
	}
	for _, id := range gone {
		if err := q.cfg.Store.DropLease(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// processStart is when this process started, near enough: a lease with
// this process's PID that started before it is an earlier process's.
var processStart = time.Now()

// deadHere reports whether the worker of lease l ran on this machine, in
// this process namespace, and is no longer alive: its process is gone, or
// it had this process's PID and is an earlier process's (it started before
// this one) or an earlier lease of this queue's.
func (q *Queue) deadHere(l madspark.WorkerLease) bool {
	if q.host == "" || l.Host != q.host {
		return false
	}
	if l.PID == os.Getpid() {
		return l.StartedAt.Before(processStart) || strings.HasPrefix(l.ID, q.id)
	}
	return !proc.Alive(l.PID)
}

// rawRunArgs are a job's arguments as stored, inserted again as they are.
type rawRunArgs json.RawMessage

func (rawRunArgs) Kind() string { return Kind }

func (a rawRunArgs) MarshalJSON() ([]byte, error) { return a, nil }

// rescueJob gives back to the queue the job of a lost worker, provided it
// is still running the attempt it had when it was listed (so a job that
// another worker rescued or took meanwhile is left alone, and no run is
// rescued twice): in one transaction, the job is finalized (discarded,
// with the loss as its error) and a new job for the same run is inserted,
// with the attempts the old one had left. A new job, rather than the same
// one made available again, is what keeps the lost worker, if it is only
// stalled, from recording its job's end over the next worker's: River
// records a job's end only while the job is running. If a cancellation was
// asked for, the job is cancelled instead and so is its run. why says why
// the run is requeued; "" means its worker was lost. It reports whether
// the job was rescued.
func (q *Queue) rescueJob(ctx context.Context, job *rivertype.JobRow, why string) (bool, error) {
	owner := "?"
	if len(job.AttemptedBy) > 0 {
		owner = job.AttemptedBy[len(job.AttemptedBy)-1]
	}
	if why == "" {
		why = "worker " + owner + " lost"
	}
	var args RunArgs
	_ = json.Unmarshal(job.EncodedArgs, &args)
	cancelled := false
	var newID int64
	ok, err := q.fence(ctx, job.ID, job.Attempt, func(tx fenceTx) error {
		var meta struct {
			CancelAttemptedAt time.Time `json:"cancel_attempted_at"`
		}
		_ = json.Unmarshal(tx.metadata, &meta)
		cancelled = !meta.CancelAttemptedAt.IsZero()
		now := time.Now().UTC()
		state := rivertype.JobStateDiscarded
		if cancelled {
			state = rivertype.JobStateCancelled
		}
		errData, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(job.Attempt, 0), Error: why})
		if err != nil {
			return err
		}
		// The transaction holds the job, which is running this attempt:
		// the horizon only has to be later than its attempt time.
		if _, err := tx.exec.JobRescueMany(ctx, &riverdriver.JobRescueManyParams{
			ID: []int64{job.ID}, Error: [][]byte{errData}, FinalizedAt: []*time.Time{&now},
			ScheduledAt: []time.Time{now}, State: []string{string(state)}, StuckHorizon: now.Add(24 * time.Hour), Schema: q.schema,
		}); err != nil {
			return err
		}
		if cancelled {
			return nil
		}
		res, err := tx.insert(ctx, []river.InsertManyParams{{
			Args:       rawRunArgs(job.EncodedArgs),
			InsertOpts: &river.InsertOpts{Queue: job.Queue, Priority: job.Priority, MaxAttempts: max(job.MaxAttempts-job.Attempt, 1), Tags: job.Tags},
		}})
		if err != nil {
			return err
		}
		newID = res[0].Job.ID
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("rescue job %d: %w", job.ID, err)
	}
	if !ok || args.RunID == "" {
		return ok, nil
	}
	if cancelled {
		q.logger.Info("cancelled the run of a lost worker", "run", args.RunID, "job", job.ID, "reason", why)
		if err := q.cfg.Engine.Fail(ctx, args.RunID, fmt.Errorf("%w by request", madspark.ErrCancelled)); err != nil {
			q.logger.Warn("could not record a run as cancelled", "run", args.RunID, "err", err)
		}
		return true, nil
	}
	q.logger.Info("requeued a run", "run", args.RunID, "job", job.ID, "new_job", newID, "reason", why)
	q.requeue(ctx, args.RunID, "requeued: "+why)
	return true, nil
}
