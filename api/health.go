package api

import (
	"context"
	"net/http"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/failure"
)

// Component is the health of a dependency.
type Component struct {
	OK     bool   `json:"ok"`
	Driver string `json:"driver"`
	// Error says what failed, when OK is false.
	Error string `json:"error,omitempty"`
}

// QueueHealth is the health of the job queue: how many workers hold a live
// lease on this database. Queued runs wait while there is none.
type QueueHealth struct {
	OK      bool `json:"ok"`
	Workers int  `json:"workers"`
}

// LastRun is the newest run.
type LastRun struct {
	RunID      string             `json:"run_id"`
	Status     madspark.RunStatus `json:"status" jsonschema:"enum=queued,enum=running,enum=succeeded,enum=failed,enum=cancelled"`
	CreatedAt  time.Time          `json:"created_at"`
	FinishedAt *time.Time         `json:"finished_at" jsonschema:"nullable"`
}

// HealthDetailed is the answer of GET /health/detailed.
type HealthDetailed struct {
	// Status is ok, degraded (the cache is down, or no worker works the
	// queue) or down (the database is unreachable: answered with 503).
	Status             string      `json:"status" jsonschema:"enum=ok,enum=degraded,enum=down"`
	Version            string      `json:"version"`
	Mode               string      `json:"mode"`
	ProviderConfigured bool        `json:"provider_configured"`
	Provider           string      `json:"provider"`
	Model              string      `json:"model"`
	Database           Component   `json:"database"`
	Cache              Component   `json:"cache"`
	Queue              QueueHealth `json:"queue"`
	LastRun            *LastRun    `json:"last_run" jsonschema:"nullable"`
	// ErrorRate1h is the share of the runs that finished in the last hour
	// that failed (cancelled ones not counted); 0 when none finished.
	ErrorRate1h float64 `json:"error_rate_1h" jsonschema:"minimum=0,maximum=1"`
	// Finished1h counts the runs that finished in the last hour.
	Finished1h int `json:"finished_1h"`
}

// healthScan bounds the runs read for the error rate.
const healthScan = 5000

func (h *Handler) healthDetailed(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	i := h.cfg.Info
	out := HealthDetailed{Status: "ok", Version: i.Version, Mode: i.Mode, ProviderConfigured: i.ProviderConfigured,
		Provider: i.Provider, Model: i.Model, Database: Component{OK: true, Driver: i.Database}}

	// The database, the newest run and the error rate, in one scan.
	now := time.Now()
	var failed, succeeded int
scan:
	for offset := 0; offset < healthScan; offset += 500 {
		runs, err := h.cfg.Store.Runs(ctx, madspark.RunFilter{Limit: 500, Offset: offset})
		if err != nil {
			out.Database = Component{OK: false, Driver: i.Database, Error: h.errorText(r, failure.Words(err, failure.Provider{}))}
			break
		}
		for _, rec := range runs {
			if out.LastRun == nil {
				out.LastRun = &LastRun{RunID: rec.ID, Status: rec.Status, CreatedAt: rec.CreatedAt.UTC()}
				if !rec.FinishedAt.IsZero() {
					t := rec.FinishedAt.UTC()
					out.LastRun.FinishedAt = &t
				}
			}
			// Runs take minutes, not hours: one created two hours ago
			// finished more than an hour ago.
			if now.Sub(rec.CreatedAt) > 2*time.Hour {
				break scan
			}
			if rec.FinishedAt.IsZero() || now.Sub(rec.FinishedAt) > time.Hour {
				continue
			}
			switch rec.Status {
			case madspark.RunFailed:
				failed++
			case madspark.RunSucceeded:
				succeeded++
			}
			out.Finished1h++
		}
		if len(runs) < 500 {
			break
		}
	}
	if failed+succeeded > 0 {
		out.ErrorRate1h = float64(int(float64(failed)/float64(failed+succeeded)*1000+0.5)) / 1000
	}

	out.Cache = Component{OK: out.Database.OK, Driver: i.Cache, Error: out.Database.Error}
	if i.CachePing != nil {
		out.Cache = Component{OK: true, Driver: i.Cache}
		if err := i.CachePing(ctx); err != nil {
			out.Cache = Component{OK: false, Driver: i.Cache, Error: h.errorText(r, failure.Words(err, failure.Provider{}))}
		}
	}
	if out.Cache.Driver == "" {
		out.Cache.Driver = "database"
	}

	if leases, err := h.cfg.Store.Leases(ctx); err == nil {
		for _, l := range leases {
			if !l.Expired {
				out.Queue.Workers++
			}
		}
		out.Queue.OK = out.Queue.Workers > 0
	}

	status := http.StatusOK
	switch {
	case !out.Database.OK:
		out.Status, status = "down", http.StatusServiceUnavailable
	case !out.Cache.OK || !out.Queue.OK:
		out.Status = "degraded"
	}
	writeJSON(w, status, out)
	return nil
}
