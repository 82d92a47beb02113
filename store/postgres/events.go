package postgres

import (
	"context"
	"fmt"
)

// EventChannel is the channel that AppendEvent notifies, with the run ID as
// payload, when the event's transaction commits.
const EventChannel = "madspark_events"

// ListenEvents calls notify with the run ID of every event appended to this
// database, by any process, as its transaction commits, until ctx is done.
// It holds one connection of the pool (LISTEN needs a session) and returns
// ctx's error, or the error that broke the connection; the caller decides
// whether to listen again. ready, if not nil, is called once the connection
// listens.
func (db *DB) ListenEvents(ctx context.Context, ready func(), notify func(runID string)) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: listen: %w", err)
	}
	// The session's LISTEN must not outlive this call: the connection is
	// closed rather than returned to the pool.
	defer func() {
		pc := conn.Hijack()
		_ = pc.Close(context.Background())
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+EventChannel); err != nil {
		return fmt.Errorf("postgres: listen: %w", err)
	}
	if ready != nil {
		ready()
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("postgres: listen: %w", err)
		}
		notify(n.Payload)
	}
}
