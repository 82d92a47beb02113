package api

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/pipeline"
)

// Outcome is how a run came out beyond its status, for its page and its
// row in every list: a proposal succeeds whether or not it passed its
// quality control, a cancelled run may keep part of its result, and a
// succeeded run may have had replies repaired.
type Outcome struct {
	// Verdict is the pipeline's own judgement of a succeeded run's result
	// (a proposal's quality control); absent when it has none.
	Verdict *pipeline.Verdict `json:"verdict,omitempty"`
	// Partial says that the run stopped before it finished and kept part
	// of its result (a cancelled chaos run's finished iterations).
	Partial bool `json:"partial"`
	// Repairs counts the repairs made to the model's replies that the
	// run's result lists.
	Repairs int `json:"repairs"`
}

// Parent is the eval, batch or conversation a run was made for, so that
// lists can group the run under it.
type Parent struct {
	Kind string `json:"kind" jsonschema:"enum=eval,enum=batch,enum=chat"`
	ID   string `json:"id"`
	// Title names it: the eval's subject, the batch's file, the
	// conversation's title; empty when it is gone.
	Title string `json:"title"`
}

// outcome describes how rec came out.
func (h *Handler) outcome(rec *madspark.Run) Outcome {
	var out Outcome
	if len(rec.Result) == 0 || string(rec.Result) == "null" {
		return out
	}
	var res struct {
		Repairs []json.RawMessage `json:"repairs"`
	}
	if json.Unmarshal(rec.Result, &res) == nil {
		out.Repairs = len(res.Repairs)
	}
	switch rec.Status {
	case madspark.RunCancelled:
		out.Partial = true
	case madspark.RunSucceeded:
		if def, err := h.cfg.Registry.Get(rec.Pipeline); err == nil && def.Verdict != nil {
			if v, err := def.Verdict(rec); err == nil {
				out.Verdict = v
			}
		}
	}
	return out
}

// durationMS is how long a finished run took, from when it was made to
// when it ended (its time in the queue included); nil while it goes on.
func durationMS(rec *madspark.Run) *int64 {
	if rec.FinishedAt.IsZero() || rec.Status == madspark.RunQueued || rec.Status == madspark.RunRunning {
		return nil
	}
	ms := max(rec.FinishedAt.Sub(rec.CreatedAt).Milliseconds(), 0)
	return &ms
}

// parentOf is the parent rec's tags name, untitled.
func parentOf(rec *madspark.Run) *Parent {
	kind, id, ok := madspark.ParentOf(rec.Tags)
	if !ok {
		return nil
	}
	return &Parent{Kind: kind, ID: id}
}

// titleParents gives the parents of runs their titles, reading each
// parent once.
func (h *Handler) titleParents(ctx context.Context, runs []RunSummary) {
	titles := map[string]string{}
	for i := range runs {
		p := runs[i].Parent
		if p == nil {
			continue
		}
		key := p.Kind + ":" + p.ID
		t, ok := titles[key]
		if !ok {
			t = h.parentTitle(ctx, p)
			titles[key] = t
		}
		p.Title = t
	}
}

// parentTitle names parent p; "" when it cannot be read.
func (h *Handler) parentTitle(ctx context.Context, p *Parent) string {
	switch p.Kind {
	case madspark.ParentEval:
		if rec, err := h.cfg.Store.Run(ctx, p.ID); err == nil {
			return h.title(rec)
		}
	case madspark.ParentBatch:
		if b, err := h.cfg.Store.Batch(ctx, p.ID); err == nil {
			return b.Source
		}
	case madspark.ParentConversation:
		if c, err := h.cfg.Store.Conversation(ctx, p.ID); err == nil {
			return c.Title
		}
	}
	return ""
}

// BestIdea is the best-scored idea of a succeeded run, for a batch's rows:
// the improved version when the pipeline improves its ideas.
type BestIdea struct {
	Text  string  `json:"text"`
	Score float64 `json:"score"`
}

// bestOf returns the best-scored idea of rec, a succeeded run of def; nil
// when its pipeline lists no ideas or it has none.
func bestOf(def pipeline.Definition, rec *madspark.Run) *BestIdea {
	if def.Ideas == nil || rec.Status != madspark.RunSucceeded {
		return nil
	}
	ideas, err := def.Ideas(rec)
	if err != nil || len(ideas) == 0 {
		return nil
	}
	scored := func(it pipeline.Idea) BestIdea {
		if it.Improved != "" {
			return BestIdea{Text: it.Improved, Score: it.ImprovedScore}
		}
		return BestIdea{Text: it.Text, Score: it.Score}
	}
	// The first of the best, in the order the run presents them.
	best := slices.MaxFunc(ideas, func(a, b pipeline.Idea) int { return cmp.Compare(scored(a).Score, scored(b).Score) })
	b := scored(best)
	return &b
}

// finished is what a batch row shows of a run that ended: its best idea
// and its outcome. A run that ended does not change until it is resumed,
// so it is kept.
type finished struct {
	best    *BestIdea
	outcome Outcome
}

// finishedCache keeps the finished view of ended runs, for a batch's
// progress stream that reads every row twice a second.
type finishedCache struct {
	mu sync.Mutex
	m  map[string]finished
}

// maxFinished bounds finishedCache; beyond it the cache starts afresh.
const maxFinished = 4096

func (c *finishedCache) get(h *Handler, rec *madspark.Run) finished {
	// A run that ended may be resumed and end again: its status is part
	// of the key.
	key := rec.ID + "/" + string(rec.Status)
	c.mu.Lock()
	f, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return f
	}
	f = finished{outcome: h.outcome(rec)}
	if def, err := h.cfg.Registry.Get(rec.Pipeline); err == nil {
		f.best = bestOf(def, rec)
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxFinished {
		c.m = map[string]finished{}
	}
	c.m[key] = f
	c.mu.Unlock()
	return f
}
