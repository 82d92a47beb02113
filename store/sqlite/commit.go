package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// maxGroup bounds the writes one transaction commits together.
const maxGroup = 64

// committer commits the store's writes in groups. A write is a function
// of a transaction; the writes waiting when the committer is free run one
// after another in one transaction, committed once. Committing is most of
// a small write's cost on SQLite (the WAL frames of every page it touched,
// the file locks), so many runs writing their journals at once (a server
// answering many requests) cost little more than one does, and a lone
// write costs what it did.
//
// A group commits all its writes or none: when one of them fails, the
// group is rolled back and each of its writes run again in a transaction
// of its own, so that each returns its own outcome. A write's function
// may therefore run twice; it must only write through tx and set its
// results anew each time.
type committer struct {
	w    *sql.DB
	reqs chan *commitReq
	stop chan struct{} // closed by close
	done chan struct{} // closed when the loop has ended
	once sync.Once
}

type commitReq struct {
	ctx  context.Context
	op   string
	fn   func(tx *sql.Tx) error
	errc chan error
}

func newCommitter(w *sql.DB) *committer {
	c := &committer{w: w, reqs: make(chan *commitReq, maxGroup), stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// errClosed is the error of a write after Close.
var errClosed = errors.New("the database is closed")

// do runs fn, in a group, and returns its outcome.
func (c *committer) do(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	req := &commitReq{ctx: ctx, op: op, fn: fn, errc: make(chan error, 1)}
	select {
	case c.reqs <- req:
	case <-ctx.Done():
		return fmt.Errorf("sqlite: %s: %w", op, ctx.Err())
	case <-c.stop:
		return fmt.Errorf("sqlite: %s: %w", op, errClosed)
	}
	select {
	case err := <-req.errc:
		return err
	case <-c.done:
		// Closed with the write queued: it ran, or never will.
		select {
		case err := <-req.errc:
			return err
		default:
			return fmt.Errorf("sqlite: %s: %w", op, errClosed)
		}
	}
}

// close stops the committer once the writes queued are done.
func (c *committer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

func (c *committer) loop() {
	defer close(c.done)
	group := make([]*commitReq, 0, maxGroup)
	for {
		var first *commitReq
		select {
		case first = <-c.reqs:
		case <-c.stop:
			// Finish what is queued.
			for {
				select {
				case req := <-c.reqs:
					c.commit([]*commitReq{req})
				default:
					return
				}
			}
		}
		group = append(group[:0], first)
		if len(c.reqs) == 0 {
			// Let writers that are about to write join the group.
			runtime.Gosched()
		}
	more:
		for len(group) < maxGroup {
			select {
			case req := <-c.reqs:
				group = append(group, req)
			default:
				break more
			}
		}
		c.commit(group)
	}
}

// commit runs a group's writes in one transaction; each write learns its
// outcome.
func (c *committer) commit(group []*commitReq) {
	live := group[:0:0]
	for _, req := range group {
		if err := req.ctx.Err(); err != nil {
			req.errc <- fmt.Errorf("sqlite: %s: %w", req.op, err)
			continue
		}
		live = append(live, req)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		req := live[0]
		req.errc <- writeAlone(req.ctx, c.w, req.op, req.fn)
		return
	}
	// The group's transaction is not cancelled with any one writer.
	tx, err := c.w.BeginTx(context.Background(), nil)
	if err != nil {
		for _, req := range live {
			req.errc <- fmt.Errorf("sqlite: %s: %w", req.op, err)
		}
		return
	}
	for _, req := range live {
		if err := req.fn(tx); err != nil {
			// One write failed: each goes on its own.
			_ = tx.Rollback()
			for _, req := range live {
				req.errc <- writeAlone(req.ctx, c.w, req.op, req.fn)
			}
			return
		}
	}
	err = tx.Commit()
	for _, req := range live {
		if err != nil {
			req.errc <- fmt.Errorf("sqlite: %s: commit: %w", req.op, err)
		} else {
			req.errc <- nil
		}
	}
}
