package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/madspark/madspark/store/sqlstore"
)

// maxGroup bounds the writes one transaction commits together.
const maxGroup = 64

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
type committer struct {
	w *sql.DB

	mu      sync.Mutex
	queue   []*commitReq // waiting for their turn
	leading bool         // a writer is committing
	closed  bool
	idle    *sync.Cond // broadcast when leading ends
}

type commitReq struct {
	ctx  context.Context
	fn   func(tx *sqlstore.Tx) error
	errc chan error    // the outcome, once committed
	turn chan struct{} // closed when this writer is to commit the queue
}

func newCommitter(w *sql.DB) *committer {
	c := &committer{w: w}
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
		c.mu.Unlock()
		// Let writers that are about to write join the group.
		runtime.Gosched()
		c.lead(req)
		return <-req.errc
	}
	req.turn = make(chan struct{})
	c.queue = append(c.queue, req)
	c.mu.Unlock()
	select {
	case err := <-req.errc:
		return err
	case <-req.turn:
		c.lead(req)
		return <-req.errc
	}
}

// lead commits first and the writes queued (up to maxGroup in all), then
// hands the turn to the first writer queued meanwhile, or ends the turn.
func (c *committer) lead(first *commitReq) {
	c.mu.Lock()
	n := min(len(c.queue), maxGroup-1)
	group := append([]*commitReq{first}, c.queue[:n]...)
	c.queue = c.queue[n:]
	c.mu.Unlock()
	c.commit(group)
	c.mu.Lock()
	defer c.mu.Unlock()
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
