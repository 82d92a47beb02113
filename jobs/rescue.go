package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/madspark/madspark"
)

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start starts working jobs, if Config.Concurrency is positive: it takes
// this worker's lease, gives back to the queue at once the jobs of workers
// that died (so a restarted server resumes its runs without waiting), then
// starts River and the loop that renews the lease and rescues the jobs of
// workers lost later. It returns once working has begun.
func (q *Queue) Start(ctx context.Context) error {
	if q.cfg.Concurrency == 0 {
		return errors.New("jobs: start: this queue only enqueues (Concurrency is 0)")
	}
	if q.started {
		return errors.New("jobs: start: already started")
	}
	lease := &madspark.WorkerLease{ID: q.id, Host: q.host, PID: os.Getpid()}
	if err := q.cfg.Store.RenewLease(ctx, lease, q.cfg.LeaseTTL); err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	if err := q.rescue(ctx); err != nil {
		q.logger.Warn("could not rescue the jobs of lost workers", "err", err)
	}
	// River's services run until Stop, not until ctx is done.
	if err := q.client.Start(context.WithoutCancel(ctx)); err != nil {
		_ = q.cfg.Store.DropLease(context.WithoutCancel(ctx), q.id)
		return fmt.Errorf("jobs: start: %w", err)
	}
	loop, stop := context.WithCancel(context.Background())
	q.stop, q.started = stop, true
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		// The lease is renewed every third of its life; lost workers are
		// looked for at least every two seconds (a dead process on this
		// machine is noticed by that, not by its lease).
		every := min(q.cfg.LeaseTTL/3, 2*time.Second)
		tick := time.NewTicker(every)
		defer tick.Stop()
		renewed := time.Now()
		for {
			select {
			case <-loop.Done():
				return
			case <-tick.C:
			}
			if time.Since(renewed) >= q.cfg.LeaseTTL/3-every/2 {
				if err := q.cfg.Store.RenewLease(loop, lease, q.cfg.LeaseTTL); err != nil {
					if loop.Err() == nil {
						q.logger.Warn("could not renew the worker's lease; its runs may be given to other workers", "worker", q.id, "err", err)
					}
				} else {
					renewed = time.Now()
				}
			}
			if err := q.rescue(loop); err != nil && loop.Err() == nil {
				q.logger.Warn("could not rescue the jobs of lost workers", "err", err)
			}
		}
	}()
	q.logger.Info("worker started", "worker", q.id, "queue", q.cfg.Provider, "concurrency", q.cfg.Concurrency)
	return nil
}

// Stop drains the worker: it takes no new job and waits for the running
// ones to finish. If ctx is done first, the running jobs are cancelled and
// their runs go back to the queue at once, to be resumed by the next worker
// without paying again for their finished steps. Then the lease is dropped.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.started {
		return nil
	}
	err := q.client.Stop(ctx)
	if err != nil && ctx.Err() != nil {
		q.hard.Store(true)
		hctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = q.client.StopAndCancel(hctx)
		cancel()
	}
	q.stop()
	q.wg.Wait()
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if derr := q.cfg.Store.DropLease(dctx, q.id); derr != nil {
		q.logger.Warn("could not drop the worker's lease", "worker", q.id, "err", derr)
	}
	q.started = false
	if err != nil {
		return fmt.Errorf("jobs: stop: %w", err)
	}
	return nil
}

// rescue gives back to the queue the running jobs of workers that are gone:
// their lease expired, or they ran on this machine and their process is no
// longer alive. The runs are recorded as queued again (or cancelled, if a
// cancellation was asked for), and the leases of gone workers are dropped.
func (q *Queue) rescue(ctx context.Context) error {
	leases, err := q.cfg.Store.Leases(ctx)
	if err != nil {
		return err
	}
	alive := map[string]bool{q.id: true}
	var gone []string
	for _, l := range leases {
		if l.ID == q.id {
			continue
		}
		if l.Expired || q.deadHere(l) {
			gone = append(gone, l.ID)
			continue
		}
		alive[l.ID] = true
	}
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
			if err := q.rescueJob(ctx, job); err != nil {
				return err
			}
		}
		if len(res.Jobs) < 1000 {
			break
		}
		params = params.After(res.LastCursor)
	}
	for _, id := range gone {
		if err := q.cfg.Store.DropLease(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// deadHere reports whether the worker of lease l ran on this machine, in
// this process namespace, and is no longer alive (a lease with this
// process's own PID but another ID is from an earlier process).
func (q *Queue) deadHere(l madspark.WorkerLease) bool {
	if q.host == "" || l.Host != q.host {
		return false
	}
	return l.PID == os.Getpid() || !processAlive(l.PID)
}

// rescueJob makes a lost worker's job available again (or cancelled, when
// a cancellation was asked for), provided nobody took it meanwhile: River's
// update applies only while the job is running with the attempt time it had
// when it was listed.
func (q *Queue) rescueJob(ctx context.Context, job *rivertype.JobRow) error {
	owner := job.AttemptedBy[len(job.AttemptedBy)-1]
	var meta struct {
		CancelAttemptedAt time.Time `json:"cancel_attempted_at"`
	}
	_ = json.Unmarshal(job.Metadata, &meta)
	now := time.Now().UTC()
	state, finalized := rivertype.JobStateAvailable, (*time.Time)(nil)
	if !meta.CancelAttemptedAt.IsZero() {
		state, finalized = rivertype.JobStateCancelled, &now
	}
	errData, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(job.Attempt, 0), Error: "worker " + owner + " lost"})
	if err != nil {
		return err
	}
	horizon := now
	if job.AttemptedAt != nil {
		horizon = job.AttemptedAt.Add(time.Millisecond)
	}
	if _, err := q.executor().JobRescueMany(ctx, &riverdriver.JobRescueManyParams{
		ID: []int64{job.ID}, Error: [][]byte{errData}, FinalizedAt: []*time.Time{finalized},
		ScheduledAt: []time.Time{now}, State: []string{string(state)}, StuckHorizon: horizon, Schema: q.schema,
	}); err != nil {
		return fmt.Errorf("rescue job %d: %w", job.ID, err)
	}
	var args RunArgs
	if err := json.Unmarshal(job.EncodedArgs, &args); err != nil || args.RunID == "" {
		return nil
	}
	q.logger.Info("rescued the run of a lost worker", "run", args.RunID, "job", job.ID, "worker", owner, "state", state)
	if state == rivertype.JobStateCancelled {
		if err := q.cfg.Engine.Fail(ctx, args.RunID, fmt.Errorf("%w by request", madspark.ErrCancelled)); err != nil {
			q.logger.Warn("could not record a run as cancelled", "run", args.RunID, "err", err)
		}
		return nil
	}
	q.requeue(ctx, args.RunID, "requeued: worker "+owner+" lost")
	return nil
}
