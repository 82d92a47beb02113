package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/madspark/madspark"
)

// ErrStopped is the cause with which the context of every request still
// in progress when the server stops is cancelled, once its drain is over
// (Config.DrainTimeout): it wraps madspark.ErrInterrupted, so that a run
// stopped by it is recorded interrupted, resumable, rather than cancelled
// by its client.
var ErrStopped = fmt.Errorf("%w: the server stopped", madspark.ErrInterrupted)

// StopCause returns the cause of ctx's end when the process serving it
// is stopping (an error wrapping madspark.ErrInterrupted, such as
// ErrStopped), and nil otherwise: ctx not done, or done because its
// client went away or its deadline passed. A Model whose run stops with
// ctx records the run interrupted when it is not nil.
func StopCause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	if cause := context.Cause(ctx); errors.Is(cause, madspark.ErrInterrupted) {
		return cause
	}
	return nil
}
