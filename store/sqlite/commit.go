package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/madspark/madspark/store/sqlstore"
)

// maxGroup bounds the writes one transaction commits together.
const maxGroup = 64

// linger is how long a write that may wait (sqlstore.MayWait: a run's
// end) waits for others to join its group while the store is busy, and
// busy is how recent the last commit must be for it to wait. The store is
// busy only while writers contend (the last group held more than one
// write): a lone writer's writes, however quick in succession, never
// wait.
const (
	linger = 10 * time.Millisecond
	busy   = 2 * linger
)

// committer commits the store's writes in groups. A write is a function
// of a transaction. A write made while no other is being committed is
// committed at once by the goroutine that makes it, alone: no other
// goroutine is woken for it. Writes made while one is being committed
// queue; when it is done, its writer hands the turn to the first of them,
// which commits the whole queue (up to maxGroup) in one transaction.
// Committing is most of a small write's cost on SQLite (the WAL frames of
// every page it touched, the file locks), so many runs writing their
// journals at once (a server answering many requests) cost little more
// than one does, and a lone write costs what it did.
//
// A group commits all its writes or none: when one of them fails, the
// group is rolled back and each of its writes run again in a transaction
// of its own, so that each returns its own outcome. A write's function
// may therefore run twice; it must only write through tx and set its
// results anew each time.
//
// A write that may wait (a run's end, whose writer has answered its
// client already) and finds no group under way while the store is busy
// (writers contend: the last group, committed less than busy ago, held
// more than one write) waits up to linger before it commits, so that other writes join it:
// each transaction's begin and commit (the file's locks, the WAL's
// header) are paid once for the group. A write that may not wait (a
// run's start, whose first token waits for it) ends the wait at once.
type committer struct {
	w *sql.DB

	mu      sync.Mutex
	queue   []*commitReq // waiting for their turn
	leading bool         // a writer is committing
	closed  bool
	idle    *sync.Cond // broadcast when leading ends
	// lastCommit is when the last group was committed, lastGroup how
	// many writes it held.
	lastCommit time.Time
	lastGroup  int
	// wake ends the wait of a lingering leader; waking says one is.
	wake   chan struct{}
	waking bool
}

type commitReq struct {
	ctx  context.Context
	fn   func(tx *sqlstore.Tx) error
	errc chan error    // the outcome, once committed
	turn chan struct{} // closed when this writer is to commit the queue
}

func newCommitter(w *sql.DB) *committer {
	c := &committer{w: w, wake: make(chan struct{}, 1)}
	c.idle = sync.NewCond(&c.mu)
	return c
}

// errClosed is the error of a write after Close.
var errClosed = errors.New("the database is closed")

// do runs fn, alone or in a group, and returns its outcome.
func (c *committer) do(ctx context.Context, fn func(tx *sqlstore.Tx) error) error {
	req := &commitReq{ctx: ctx, fn: fn, errc: make(chan error, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	if !c.leading {
		c.leading = true
		wait := c.lingers(sqlstore.MayWait(ctx))
		if wait {
			c.waking = true
			select { // a wake left from an earlier wait
			case <-c.wake:
			default:
			}
		}
		c.mu.Unlock()
		if wait {
			// Let other writes join the group, until one may not wait.
			t := time.NewTimer(linger)
			select {
			case <-t.C:
			case <-c.wake:
				t.Stop()
			}
		} else {
			// Let writers that are about to write join the group.
			runtime.Gosched()
		}
		c.lead(req)
		return <-req.errc
	}
	req.turn = make(chan struct{})
	c.queue = append(c.queue, req)
	if c.waking && (!sqlstore.MayWait(ctx) || len(c.queue) >= maxGroup-1) {
		c.waking = false
		c.wake <- struct{}{}
	}
	c.mu.Unlock()
	select {
	case err := <-req.errc:
		return err
	case <-req.turn:
		c.lead(req)
		return <-req.errc
	}
}

// lingers reports whether a write that finds no group under way waits
// for others to join it: one that may wait (mayWait), while writers
// contend. c.mu is held.
func (c *committer) lingers(mayWait bool) bool {
	return mayWait && c.lastGroup > 1 && time.Since(c.lastCommit) < busy
}

// lead commits first and the writes queued (up to maxGroup in all), then
// hands the turn to the first writer queued meanwhile, or ends the turn.
func (c *committer) lead(first *commitReq) {
	c.mu.Lock()
	c.waking = false
	n := min(len(c.queue), maxGroup-1)
	group := append([]*commitReq{first}, c.queue[:n]...)
	c.queue = c.queue[n:]
	c.mu.Unlock()
	c.commit(group)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastCommit, c.lastGroup = time.Now(), len(group)
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue = c.queue[1:]
		close(next.turn)
		return
	}
	c.leading = false
	c.idle.Broadcast()
}

// close waits for the writes queued to be committed; writes made after it
// fail.
func (c *committer) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for c.leading {
		c.idle.Wait()
	}
}

// commit runs a group's writes in one transaction; each write learns its
// outcome.
func (c *committer) commit(group []*commitReq) {
	live := group[:0:0]
	for _, req := range group {
		if err := req.ctx.Err(); err != nil {
			req.errc <- err
			continue
		}
		live = append(live, req)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		req := live[0]
		req.errc <- writeAlone(req.ctx, c.w, req.fn)
		return
	}
	// The group's transaction is not cancelled with any one writer.
	tx, err := c.w.BeginTx(context.Background(), nil)
	if err != nil {
		for _, req := range live {
			req.errc <- err
		}
		return
	}
	for _, req := range live {
		if err := req.fn(&sqlstore.Tx{Tx: tx}); err != nil {
			// One write failed: each goes on its own.
			_ = tx.Rollback()
			for _, req := range live {
				req.errc <- writeAlone(req.ctx, c.w, req.fn)
			}
			return
		}
	}
	if err = tx.Commit(); err != nil {
		err = fmt.Errorf("commit: %w", err)
	}
	for _, req := range live {
		req.errc <- err
	}
}
