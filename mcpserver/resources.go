package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/export"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/llm"
)

// runScheme prefixes the URIs of runs.
const runScheme = "madspark://runs/"

func runURI(id string) string { return runScheme + id }

// exportKind is an export served as a resource.
type exportKind struct {
	ext, format, mime, desc string
}

var exports = []exportKind{
	{ext: "md", format: "markdown", mime: "text/markdown", desc: "The run's report in Markdown."},
	{ext: "pdf", format: "pdf", mime: "application/pdf", desc: "The run's report as PDF."},
}

// fileName is the name of an export, as the REST API's downloads name it.
func fileName(pipeline, id string, x exportKind) string {
	return export.FileName(&madspark.Run{ID: id, Pipeline: pipeline}, x.format)
}

// listPage is how many runs one page of resources/list lists.
const listPage = 20

// addResources registers the resource templates of runs and their
// exports, and lists the recent runs for resources/list.
func (s *Server) addResources() {
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: runScheme + "{id}", Name: "run", Title: "A madspark run",
		Description: "A run of a pipeline as JSON: its status, parameters, result once it succeeded, error, usage, repairs and progress.",
		MIMEType:    "application/json"}, s.readRun)
	for _, x := range exports {
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: runScheme + "{id}/export." + x.ext, Name: "export-" + x.ext,
			Title: "A run's " + strings.TrimSuffix(strings.TrimPrefix(x.desc, "The run's "), "."), Description: x.desc + " Only a succeeded run has one.",
			MIMEType: x.mime}, s.readExport(x))
	}
	// resources/list answers with the recent runs, read from the store
	// when asked, rather than with resources registered one by one.
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if lr, ok := req.(*mcp.ListResourcesRequest); ok && method == "resources/list" {
				return s.listRuns(ctx, lr)
			}
			return next(ctx, method, req)
		}
	})
}

// listRuns lists the runs, newest first, a page at a time: each as its
// JSON, with the exports of the succeeded ones. The cursor is the offset
// of the next page.
func (s *Server) listRuns(ctx context.Context, req *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	offset := 0
	if req.Params != nil && req.Params.Cursor != "" {
		n, err := strconv.Atoi(req.Params.Cursor)
		if err != nil || n < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid cursor %q: give the nextCursor of an earlier page", clip(req.Params.Cursor, 40))}
		}
		offset = n
	}
	if _, err := s.cfg.Engine.Interrupt(ctx); err != nil {
		s.log.Warn("could not look for interrupted runs", "err", err)
	}
	runs, err := s.cfg.Store.Runs(ctx, madspark.RunFilter{Limit: listPage + 1, Offset: offset})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	if len(runs) > listPage {
		runs = runs[:listPage]
		out.NextCursor = strconv.Itoa(offset + listPage)
	}
	for _, rec := range runs {
		title := s.title(rec)
		name := rec.Pipeline
		if title != "" {
			name += ": " + title
		}
		out.Resources = append(out.Resources, &mcp.Resource{URI: runURI(rec.ID), Name: "run " + rec.ID, Title: fmt.Sprintf("%s (%s)", clip(name, 80), rec.Status),
			MIMEType: "application/json", Description: fmt.Sprintf("A run of %s, %s, started %s.", rec.Pipeline, rec.Status, rec.CreatedAt.UTC().Format(time.RFC3339))})
		if rec.Status != madspark.RunSucceeded {
			continue
		}
		if def, err := s.cfg.Registry.Get(rec.Pipeline); err != nil || def.Document == nil {
			continue
		}
		for _, x := range exports {
			out.Resources = append(out.Resources, &mcp.Resource{URI: runURI(rec.ID) + "/export." + x.ext, Name: fileName(rec.Pipeline, rec.ID, x),
				Title: clip(name, 80) + " (" + x.ext + ")", MIMEType: x.mime, Description: x.desc})
		}
	}
	return out, nil
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	r := []rune(oneLine(s))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

// title is what rec is about, by its pipeline's Topic.
func (s *Server) title(rec *madspark.Run) string {
	def, err := s.cfg.Registry.Get(rec.Pipeline)
	if err != nil || def.Topic == nil {
		return ""
	}
	p := def.NewParams()
	if json.Unmarshal(rec.Params, p) != nil {
		return ""
	}
	return oneLine(def.Topic(p))
}

// RunDoc is a run as its resource gives it.
type RunDoc struct {
	RunID    string             `json:"run_id"`
	Pipeline string             `json:"pipeline"`
	Status   madspark.RunStatus `json:"status"`
	// Resumable says that madspark resume (or the REST API's resume)
	// finishes the run from its journal.
	Resumable  bool            `json:"resumable"`
	Title      string          `json:"title,omitempty"`
	Mode       string          `json:"mode"`
	Provider   string          `json:"provider"`
	Model      string          `json:"model"`
	Tags       []string        `json:"tags,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	Params     json.RawMessage `json:"params"`
	// Result is the pipeline's result, once the run succeeded.
	Result json.RawMessage `json:"result,omitempty"`
	// Error says why the run failed or was cancelled, in words (package
	// failure).
	Error string    `json:"error,omitempty"`
	Usage llm.Usage `json:"usage"`
	// Repairs are the repairs made to the run's replies so far.
	Repairs []llm.Repair `json:"repairs"`
	// Progress is the run's latest event: its stage, percentage and
	// message.
	Progress *Progress `json:"progress,omitempty"`
	// Exports are the URIs of the run's exports, once it succeeded.
	Exports []string `json:"exports,omitempty"`
}

// Progress is where a run stands.
type Progress struct {
	Stage    string `json:"stage"`
	Progress int    `json:"progress"`
	Message  string `json:"message"`
}

// idOf is the run ID of a URI of a run or of one of its exports.
func idOf(uri, suffix string) string {
	id := strings.TrimSuffix(strings.TrimPrefix(uri, runScheme), suffix)
	if id == "" || strings.ContainsAny(id, "/?#") {
		return ""
	}
	return id
}

// load reads run id of uri; a run that does not exist is the protocol's
// "resource not found".
func (s *Server) load(ctx context.Context, uri, id string) (*madspark.Run, error) {
	if id == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	rec, err := s.cfg.Store.Run(ctx, id)
	if errors.Is(err, madspark.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	return rec, nil
}

func (s *Server) readRun(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rec, err := s.load(ctx, uri, idOf(uri, ""))
	if err != nil {
		return nil, err
	}
	doc := RunDoc{RunID: rec.ID, Pipeline: rec.Pipeline, Status: rec.Status, Resumable: rec.Status.Resumable(), Title: s.title(rec),
		Mode: rec.Mode, Provider: rec.Provider, Model: rec.Model, Tags: rec.Tags, CreatedAt: rec.CreatedAt.UTC(),
		Params: rec.Params, Error: failure.Scrub(failure.Of(rec.Error).Line()), Usage: rec.Usage}
	if len(doc.Params) == 0 {
		doc.Params = json.RawMessage("{}")
	}
	if !rec.FinishedAt.IsZero() {
		t := rec.FinishedAt.UTC()
		doc.FinishedAt = &t
	}
	if rec.Status == madspark.RunSucceeded {
		doc.Result = rec.Result
		if def, err := s.cfg.Registry.Get(rec.Pipeline); err == nil && def.Document != nil {
			for _, x := range exports {
				doc.Exports = append(doc.Exports, runURI(rec.ID)+"/export."+x.ext)
			}
		}
	}
	if doc.Repairs, err = s.repairs(ctx, rec); err != nil {
		return nil, err
	}
	last, err := s.cfg.Store.LastEvent(ctx, rec.ID)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", rec.ID, err)
	}
	if last != nil {
		doc.Progress = &Progress{Stage: last.Stage, Progress: min(max(last.Progress, 0), 100), Message: last.Message}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// repairs are a run's repairs: its result's list once it succeeded (which
// holds those its pipeline made itself too), else those of its journaled
// steps.
func (s *Server) repairs(ctx context.Context, rec *madspark.Run) ([]llm.Repair, error) {
	if rec.Status == madspark.RunSucceeded {
		var r struct {
			Repairs []llm.Repair `json:"repairs"`
		}
		if json.Unmarshal(rec.Result, &r) == nil && r.Repairs != nil {
			return r.Repairs, nil
		}
	}
	steps, err := s.cfg.Store.Steps(ctx, rec.ID)
	if err != nil {
		return nil, fmt.Errorf("read the steps of run %s: %w", rec.ID, err)
	}
	out := []llm.Repair{}
	for _, st := range steps {
		out = append(out, st.Repairs...)
	}
	return out, nil
}

// readExport reads the export x of a succeeded run.
func (s *Server) readExport(x exportKind) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		rec, err := s.load(ctx, uri, idOf(uri, "/export."+x.ext))
		if err != nil {
			return nil, err
		}
		def, err := s.cfg.Registry.Get(rec.Pipeline)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", rec.ID, err)
		}
		f, err := export.Render(def, rec, x.format, export.Options{Font: s.cfg.PDFFont})
		if errors.Is(err, export.ErrNoResult) || errors.Is(err, export.ErrUnsupported) {
			return nil, fmt.Errorf("run %s has no %s export: %w", rec.ID, x.ext, err)
		}
		if err != nil {
			return nil, err
		}
		c := &mcp.ResourceContents{URI: uri, MIMEType: x.mime}
		if x.ext == "pdf" {
			c.Blob = f.Data
		} else {
			c.Text = string(f.Data)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
	}
}
