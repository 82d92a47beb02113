package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/bookmark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/spark"
)

// Remix reads the bookmarks ids, which a spark run builds on: their ideas
// become its seed ideas. A missing one is an InputError.
func (a *App) Remix(ctx context.Context, ids []string) ([]*madspark.Bookmark, error) {
	var bs []*madspark.Bookmark
	for _, id := range ids {
		b, err := a.Store.Bookmark(ctx, id)
		if errors.Is(err, madspark.ErrNotFound) {
			return nil, Inputf("--remix: no bookmark %s (madspark bookmarks list)", id)
		}
		if err != nil {
			return nil, err
		}
		bs = append(bs, b)
	}
	return bs, nil
}

// Spark runs the spark pipeline and returns its report.
func (a *App) Spark(ctx context.Context, p spark.Params, timeout time.Duration) (*spark.Report, *engine.Run, error) {
	pipe, err := spark.New()
	if err != nil {
		return nil, nil, err
	}
	var res *spark.Result
	run, elapsed, err := a.Execute(ctx, Spec{Pipeline: "spark", Params: p, Timeout: timeout}, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		res, err = pipe.Run(ctx, r, p)
		return res, err
	})
	if err != nil {
		return nil, run, err
	}
	return spark.NewReport(res, run.ID(), a.Info.Mode(), a.Info.Name, a.Info.Model, run.Usage(), elapsed), run, nil
}

// BookmarkCandidates bookmarks every candidate of a succeeded spark run
// with tags, telling of each one kept and each one refused as a
// near-duplicate of a kept bookmark.
func (a *App) BookmarkCandidates(ctx context.Context, rec *madspark.Run, tags []string) error {
	def := pipeline.Definition{Name: "spark", Ideas: spark.Ideas}
	ideas, err := spark.Ideas(rec)
	if err != nil {
		return err
	}
	for i := range ideas {
		b, err := bookmark.FromRun(def, rec, i, tags, "")
		if err != nil {
			return err
		}
		dups, err := bookmark.Save(ctx, a.Store, b, false)
		if de, ok := errors.AsType[*bookmark.DuplicateError](err); ok {
			a.notice("candidate %d not bookmarked: %v", i+1, de)
			continue
		}
		if err != nil {
			return err
		}
		note := ""
		if dups.Recommendation == bookmark.Warn {
			note = fmt.Sprintf(" (similar to bookmark %s, %.2f)", dups.Similar[0].Bookmark.ID, dups.Similar[0].Similarity)
		}
		a.notice("candidate %d bookmarked as %s%s", i+1, b.ID, note)
	}
	return nil
}
