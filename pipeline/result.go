package pipeline

import (
	"encoding/json"
	"fmt"

	"github.com/madspark/madspark"
)

// StoredResult decodes the result that run recorded as a T, the pipeline's
// Result type: what a Definition's Files, Document, Table and Ideas start
// from. The error names the run.
func StoredResult[T any](run *madspark.Run) (*T, error) {
	var res T
	if err := json.Unmarshal(run.Result, &res); err != nil {
		return nil, fmt.Errorf("run %s: stored result: %w", run.ID, err)
	}
	return &res, nil
}
