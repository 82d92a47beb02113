package jobs

import (
	"context"

	"github.com/riverqueue/river/rivertype"
)

// RescueJob rescues job as the rescue of a lost worker's jobs does.
func (q *Queue) RescueJob(ctx context.Context, job *rivertype.JobRow) (bool, error) {
	return q.rescueJob(ctx, job, "")
}
