package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// retries publishes the retry events of one call of a run: one for each
// retry of it as it is made (told by middleware.Retry through
// llm.WithRetryObserver), then, if it was retried, one for how it ended.
// A call's retries and its end are told from the calling goroutine.
type retries struct {
	r    *Run
	data madspark.RetryData
	told bool
}

// retriesOf returns the retries of a new call of step key of r, made by
// req's agent.
func (r *Run) retriesOf(key string, req *llm.Request) *retries {
	return &retries{r: r, data: madspark.RetryData{Call: fmt.Sprintf("%s#%d", key, r.calls.Add(1)), Agent: req.Agent}}
}

// retry publishes rt, a retry of the call.
func (t *retries) retry(rt llm.Retry) {
	t.told = true
	t.data.Attempt, t.data.MaxAttempts, t.data.DelayMS = rt.Attempt+1, rt.MaxAttempts, rt.Delay.Milliseconds()
	t.data.Error = ""
	if rt.Err != nil {
		t.data.Error = strings.Join(strings.Fields(rt.Err.Error()), " ")
	}
	t.r.emitRetry(t.data, fmt.Sprintf("a call failed; trying again in %s (attempt %d of %d)",
		rt.Delay.Round(time.Millisecond), t.data.Attempt, t.data.MaxAttempts))
}

// end publishes how the call ended, err nil for success, if it was
// retried.
func (t *retries) end(err error) {
	if !t.told {
		return
	}
	d := t.data
	d.DelayMS, d.Error = 0, ""
	msg := fmt.Sprintf("the call succeeded at attempt %d", d.Attempt)
	d.Ended = madspark.RetrySucceeded
	if err != nil {
		d.Ended, d.Error = madspark.RetryFailed, strings.Join(strings.Fields(err.Error()), " ")
		msg = fmt.Sprintf("the call failed at attempt %d", d.Attempt)
	}
	t.r.emitRetry(d, msg)
}

// emitRetry publishes a retry event with data d, at the run's stage and
// progress. It goes to Engine.Events only, not the run's sink: the
// command line logs each retry itself.
func (r *Run) emitRetry(d madspark.RetryData, message string) {
	data, err := json.Marshal(d)
	if err != nil {
		return
	}
	r.mu.Lock()
	stage, progress := r.stage, r.progress
	r.mu.Unlock()
	r.publish(context.Background(), &madspark.Event{RunID: r.rec.ID, Type: madspark.EventRetry, Stage: stage, Progress: progress,
		Message: message, Data: data, Time: r.e.now()})
}
