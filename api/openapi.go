package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/invopop/jsonschema"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/bookmark"
	"github.com/madspark/madspark/eval"
	"github.com/madspark/madspark/export"
	"github.com/madspark/madspark/inspect"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline/spark"
)

// operation documents a route.
type operation struct {
	summary, desc string
	tag           string
	params        []param
	// body is a value of the request body's type (JSON), or nil;
	// bodyContent gives the schema of each content type instead.
	body        any
	bodyContent map[string]map[string]any
	// responses, by status; common errors are added by errs.
	responses []response
}

// param is a path, query or header parameter.
type param struct {
	name, in, desc string
	required       bool
	schema         map[string]any
}

// response is one documented answer.
type response struct {
	status int
	desc   string
	// body is a value of the JSON body's type; or content gives the
	// schema of each non-JSON content type.
	body    any
	content map[string]map[string]any
	headers map[string]string
}

func pathID(what string) param {
	return param{name: "id", in: "path", required: true, desc: "the " + what + "'s ID", schema: map[string]any{"type": "string"}}
}

func queryParam(name, desc string, schema map[string]any) param {
	return param{name: name, in: "query", desc: desc, schema: schema}
}

var (
	limitParam  = queryParam("limit", "page size", map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 20})
	offsetParam = queryParam("offset", "items to skip", map[string]any{"type": "integer", "minimum": 0, "maximum": 1000000, "default": 0})
	tagParam    = param{name: "tag", in: "query", desc: "keep the bookmarks with every one of these tags (repeat for more)",
		schema: map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}
	runIDParam = queryParam("run_id", "keep the bookmarks of this run's ideas", map[string]any{"type": "string"})
	afterParam = queryParam("after", "replay the events after this sequence number (default: all)", map[string]any{"type": "integer", "minimum": 0})
)

// errs documents the error answers with the given statuses.
func errs(statuses ...int) []response {
	desc := map[int]string{
		400: "malformed: invalid JSON, an unknown field, a value of the wrong type (the field is named)",
		404: "no such resource",
		409: "conflict with the resource's state",
		413: "request body too large",
		415: "unsupported Content-Type",
		422: "a value out of range or inconsistent (the field is named)",
		502: "the run failed at its model provider",
	}
	out := make([]response, 0, len(statuses))
	for _, s := range statuses {
		out = append(out, response{status: s, desc: desc[s], body: ErrorBody{}})
	}
	return out
}

// table is the API's routes with their documentation, in the order of the
// OpenAPI document.
func (h *Handler) table() []route {
	ok := func(body any, desc string) response { return response{status: 200, desc: desc, body: body} }
	return []route{
		{"GET", "/api/pipelines", h.listPipelines, operation{tag: "pipelines",
			summary:   "The registered pipelines, with their parameters' JSON Schema and defaults",
			responses: []response{ok(PipelineList{}, "the pipelines, by name")}}},
		{"POST", "/api/runs", h.startRun, operation{tag: "runs",
			summary: "Start a run in the background",
			desc:    "The parameters are checked against the pipeline's schema (those left out take their defaults) and the run is queued; a worker runs it. chaos gets a random seed when none is given, fixed in the run's parameters.",
			body:    StartRunRequest{},
			responses: append([]response{{status: 202, desc: "queued", body: StartRunResponse{},
				headers: map[string]string{"Location": "the run's URL"}}}, errs(400, 413, 422)...)}},
		{"GET", "/api/runs", h.listRuns, operation{tag: "runs",
			summary: "Run history, newest first",
			params: []param{
				queryParam("pipeline", "only runs of this pipeline", map[string]any{"type": "string"}),
				queryParam("status", "only runs in this state", map[string]any{"type": "string", "enum": []string{"queued", "running", "succeeded", "failed", "cancelled", "interrupted"}}),
				queryParam("q", "only runs whose parameters contain this text (the topic, prompt, query or idea), ignoring case", map[string]any{"type": "string", "maxLength": 200}),
				limitParam, offsetParam,
			},
			responses: append([]response{ok(RunList{}, "a page of runs")}, errs(400, 422)...)}},
		{"GET", "/api/runs/{id}", h.getRun, operation{tag: "runs",
			summary:   "A run: its state, parameters, latest progress, and its result once it succeeded",
			params:    []param{pathID("run")},
			responses: append([]response{ok(Run{}, "the run")}, errs(404)...)}},
		{"DELETE", "/api/runs/{id}", h.cancelRun, operation{tag: "runs",
			summary:   "Cancel a queued or running run",
			desc:      "A queued run is cancelled at once; a running one is stopped by its worker, which the answer waits for (a few seconds at most).",
			params:    []param{pathID("run")},
			responses: append([]response{{status: 202, desc: "cancelled (or, rarely, still stopping: running)", body: CancelResponse{}}}, errs(404, 409)...)}},
		{"POST", "/api/runs/{id}/resume", h.resumeRun, operation{tag: "runs",
			summary:   "Resume a failed, cancelled or interrupted run",
			desc:      "The run goes back to the queue; a worker replays its finished steps from the journal, with no model call, and runs the rest. A run that another process still works, or that is queued or succeeded, is a 409 that says so.",
			params:    []param{pathID("run")},
			responses: append([]response{{status: 202, desc: "queued to resume", body: RunSummary{}}}, errs(404, 409)...)}},
		{"GET", "/api/runs/{id}/events", h.runEvents, operation{tag: "progress",
			summary: "A run's progress as server-sent events",
			desc:    "Each event has id: SEQ, event: progress|retry|result|error and data: a Message (#/components/schemas/Message); a retry event's Message has data: a RunRetry (a call of the run failed with an error that may pass and is sent again after a pause; then, with ended, how that call ended). A client first receives every event it missed (all, or those after ?after=SEQ or Last-Event-ID), then live ones; the stream ends after the final result or error event. Comments keep an idle stream alive.",
			params: []param{pathID("run"), afterParam,
				{name: "Last-Event-ID", in: "header", desc: "the last sequence number received (EventSource sends it when it reconnects)", schema: map[string]any{"type": "string"}}},
			responses: append([]response{{status: 200, desc: "the event stream",
				content: map[string]map[string]any{"text/event-stream": {"schema": map[string]any{"type": "string"}}}}}, errs(400, 404)...)}},
		{"GET", "/api/runs/{id}/export", h.exportRun, operation{tag: "runs",
			summary: "A run as a file: JSON (any run), CSV, Markdown or PDF (a succeeded run)",
			desc:    `The file is named madspark-<pipeline>-<last 8 characters of the run ID>.<json|csv|md|pdf> (Content-Disposition). CSV cells that a spreadsheet would take for a formula start with '.`,
			params: []param{pathID("run"),
				queryParam("format", "the file's format", map[string]any{"type": "string", "enum": []string{"json", "csv", "markdown", "md", "pdf"}, "default": "json"})},
			responses: append([]response{{status: 200, desc: "the file", headers: map[string]string{"Content-Disposition": `attachment; filename="madspark-<pipeline>-<id8>.<ext>"`},
				content: map[string]map[string]any{
					"application/json":             {"schema": map[string]any{"$ref": "#/components/schemas/ExportEnvelope"}},
					"text/csv; charset=utf-8":      {"schema": map[string]any{"type": "string"}},
					"text/markdown; charset=utf-8": {"schema": map[string]any{"type": "string"}},
					"application/pdf":              {"schema": map[string]any{"type": "string", "contentMediaType": "application/pdf"}},
				}}}, errs(404, 409, 422)...)}},
		{"GET", "/api/runs/{id}/steps", h.runSteps, operation{tag: "runs",
			summary:   "A run's steps and their LLM calls: prompt, response, tokens, latency, cost, attempts, cache hits",
			desc:      "Steps appear as they finish, in the order they started, so a client polls while the run is going. prompt is what the step's last call sent (system message first) and response its raw reply; calls lists every call of the step.",
			params:    []param{pathID("run")},
			responses: append([]response{ok(inspect.View{}, "the run's steps")}, errs(404)...)}},
		{"GET", "/ws/runs/{id}", h.runWebSocket, operation{tag: "progress",
			summary: "A run's progress over a WebSocket",
			desc:    "The same Messages (#/components/schemas/Message) as the event stream, one per text frame, with the same replay (?after=SEQ); the server closes the socket normally (1000) after the final message, or with 1001 when it stops (reconnect with ?after=). Pages of other origins than the server's need MADSPARK_CORS_ORIGINS.",
			params:  []param{pathID("run"), afterParam},
			responses: append([]response{{status: 101, desc: "switching to the WebSocket protocol"},
				{status: 403, desc: "the page's origin is not allowed", content: map[string]map[string]any{"text/plain": {"schema": map[string]any{"type": "string"}}}},
				{status: 426, desc: "not a WebSocket handshake", content: map[string]map[string]any{"text/plain": {"schema": map[string]any{"type": "string"}}}},
			}, errs(400, 404)...)}},
		{"POST", "/api/batches", h.createBatch, operation{tag: "batches",
			summary: "Start a batch: every row of a CSV or JSON file as a run",
			desc: fmt.Sprintf("The body is the file itself (Content-Type text/csv or application/json) or a multipart/form-data form whose part \"file\" is the file. "+
				"CSV (spark only) has a header row: topic (or theme), context (or constraints), temperature_preset, num_candidates, num_top_candidates, tags (another column is a 400 unless ignore_unknown_columns); "+
				"JSON is an array of objects: spark's fields as in CSV, or the pipeline's own parameters (and tags). "+
				"Each row is checked on its own: a bad row is rejected with its line and reason, and the others run. "+
				"A file may hold up to %d rows and %d bytes (413 beyond); an empty file, a CSV file without a header or JSON that is not an array is a 400.", batch.MaxRows, batch.MaxBytes),
			params: []param{queryParam("pipeline", "the pipeline of every row", map[string]any{"type": "string", "default": "spark"}),
				queryParam("ignore_unknown_columns", "run a CSV file whose header has columns that are not parameters, ignoring them (with a warning); without it such a file is a 400 that names them", map[string]any{"type": "boolean", "default": false})},
			bodyContent: map[string]map[string]any{
				"text/csv":         {"schema": map[string]any{"type": "string"}},
				"application/json": {"schema": map[string]any{"type": "array", "items": map[string]any{"type": "object"}}},
				"multipart/form-data": {"schema": map[string]any{"type": "object", "required": []string{"file"},
					"properties": map[string]any{"file": map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}}}},
			},
			responses: append([]response{{status: 202, desc: "queued: the rows accepted, with their runs, and those rejected, with their lines and reasons", body: CreateBatchResponse{},
				headers: map[string]string{"Location": "the batch's URL"}}}, errs(400, 413, 415, 422)...)}},
		{"GET", "/api/batches", h.listBatches, operation{tag: "batches",
			summary:   "Batches, newest first, with their counts",
			params:    []param{limitParam, offsetParam},
			responses: append([]response{ok(BatchList{}, "a page of batches")}, errs(400, 422)...)}},
		{"GET", "/api/batches/{id}", h.getBatch, operation{tag: "batches",
			summary:   "A batch: its counts and its rows (line, topic, status, run, error, progress)",
			params:    []param{pathID("batch")},
			responses: append([]response{ok(Batch{}, "the batch")}, errs(404)...)}},
		{"DELETE", "/api/batches/{id}", h.cancelBatch, operation{tag: "batches",
			summary:   "Cancel a batch's unfinished runs",
			desc:      "Queued runs are cancelled at once; running ones are stopped by their workers. Rows that finished keep their results.",
			params:    []param{pathID("batch")},
			responses: append([]response{{status: 202, desc: "cancelled", body: CancelBatchResponse{}}}, errs(404)...)}},
		{"GET", "/api/batches/{id}/results", h.batchResults, operation{tag: "batches",
			summary: "A batch's results: the document madspark batch --output writes (JSON), or a spreadsheet of its rows (CSV)",
			desc: "As CSV, a row per line of the file, in order, under the header " + strings.Join(resultsCSVHeader, ",") +
				": the row's run, its best-scored idea and score (when its pipeline lists ideas), the pipeline's verdict (a proposal's quality control), the replies repaired, what it cost (cost_usd empty when unpriced) and why a row failed. Cells a spreadsheet would take for a formula start with '.",
			params: []param{pathID("batch"),
				queryParam("format", "the file's format", map[string]any{"type": "string", "enum": []string{"json", "csv"}, "default": "json"})},
			responses: append([]response{{status: 200, desc: "per row: line, topic, run, status, error and the run's result",
				headers: map[string]string{"Content-Disposition": `attachment; filename="madspark-batch-<id8>-results.<json|csv>"`},
				content: map[string]map[string]any{
					"application/json":        {"schema": map[string]any{"$ref": "#/components/schemas/BatchResults"}},
					"text/csv; charset=utf-8": {"schema": map[string]any{"type": "string"}},
				}}}, errs(404, 422)...)}},
		{"GET", "/api/batches/{id}/export", h.exportBatch, operation{tag: "batches",
			summary: "A zip of every succeeded row's files, one directory per row, and results.json",
			params:  []param{pathID("batch")},
			responses: append([]response{{status: 200, desc: "the zip", headers: map[string]string{"Content-Disposition": `attachment; filename="madspark-batch-<id8>.zip"`},
				content: map[string]map[string]any{"application/zip": {"schema": map[string]any{"type": "string", "contentMediaType": "application/zip"}}}}}, errs(404)...)}},
		{"GET", "/api/batches/{id}/events", h.batchEvents, operation{tag: "progress",
			summary: "A batch's progress as server-sent events",
			desc:    "event: progress with data: the batch (#/components/schemas/Batch) when it changes, then event: done with the batch once every row has finished or was rejected; the stream ends there. Comments keep an idle stream alive.",
			params:  []param{pathID("batch")},
			responses: append([]response{{status: 200, desc: "the event stream",
				content: map[string]map[string]any{"text/event-stream": {"schema": map[string]any{"type": "string"}}}}}, errs(404)...)}},
		{"POST", "/api/evals", h.startEval, operation{tag: "evals",
			summary: "Start an eval: a pipeline against a single call to the same model, judged pairwise in both orders",
			desc:    "The topics are checked as each pipeline run's parameters would be, and the eval is queued as a run of the pipeline eval; a worker runs it. Its progress streams like any run's.",
			body:    StartEvalRequest{},
			responses: append([]response{{status: 202, desc: "queued", body: StartRunResponse{},
				headers: map[string]string{"Location": "the eval's URL"}}}, errs(400, 413, 422)...)}},
		{"GET", "/api/evals/compare", h.compareEvals, operation{tag: "evals",
			summary: "Two succeeded evals side by side: their win rates and intervals, the difference, whether the intervals overlap, and the winners of the topics they share",
			desc:    "No model is called.",
			params: []param{{name: "a", in: "query", desc: "the first eval's ID", schema: map[string]any{"type": "string"}, required: true},
				{name: "b", in: "query", desc: "the second eval's ID", schema: map[string]any{"type": "string"}, required: true}},
			responses: append([]response{ok(eval.Comparison{}, "the comparison")}, errs(404, 409, 422)...)}},
		{"GET", "/api/evals/{id}", h.getEval, operation{tag: "evals",
			summary:   "An eval: its state and progress, and its report once it succeeded (wins, losses, ties, win rate with its 95% Wilson interval, per-topic winners and runs)",
			params:    []param{pathID("eval")},
			responses: append([]response{ok(Eval{}, "the eval")}, errs(404)...)}},
		{"POST", "/api/generate-ideas", h.generateIdeas, operation{tag: "runs",
			summary:   "Run spark and answer when it is done (the seed's synchronous form)",
			desc:      "The run is recorded like any other. The answer is spark's JSON contract, as `madspark --output-format json` prints it.",
			body:      GenerateIdeasRequest{},
			responses: append([]response{ok(spark.Report{}, "the spark run's result")}, errs(400, 413, 422, 502)...)}},
		{"POST", "/api/bookmarks", h.createBookmark, operation{tag: "bookmarks",
			summary: "Bookmark an idea of a succeeded run, checked for duplicates",
			desc:    "A bookmark near-identical (similarity ≥ 0.9) to one of the 1000 newest kept ones is refused with 409 and the duplicates, unless force is true; a similar one (≥ 0.7) is kept with recommendation warn.",
			body:    CreateBookmarkRequest{},
			responses: append([]response{{status: 201, desc: "kept", body: CreateBookmarkResponse{},
				headers: map[string]string{"Location": "the bookmark's URL"}}}, errs(400, 404, 409, 413, 422)...)}},
		{"POST", "/api/bookmarks/check", h.checkBookmark, operation{tag: "bookmarks",
			summary: "Check an idea against the kept bookmarks (the 1000 newest)",
			body:    CheckRequest{},
			responses: append([]response{ok(Duplicates{}, "the similar bookmarks (similarity ≥ 0.7), most similar first, and the recommendation: block ≥ 0.9, warn ≥ 0.7, else allow")},
				errs(400, 413, 422)...)}},
		{"GET", "/api/bookmarks", h.listBookmarks, operation{tag: "bookmarks",
			summary:   "Bookmarks, newest first",
			params:    []param{tagParam, runIDParam, limitParam, offsetParam},
			responses: append([]response{ok(BookmarkPage{}, "a page of bookmarks")}, errs(400, 422)...)}},
		{"GET", "/api/bookmarks/search", h.searchBookmarks, operation{tag: "bookmarks",
			summary: "Bookmarks whose topic, context, idea or improved idea contains a text",
			params: []param{{name: "q", in: "query", required: true, desc: "the text, matched ignoring case", schema: map[string]any{"type": "string", "minLength": 1, "maxLength": 200}},
				tagParam, runIDParam, limitParam, offsetParam},
			responses: append([]response{ok(BookmarkPage{}, "a page of bookmarks")}, errs(400, 422)...)}},
		{"GET", "/api/bookmarks/export", h.exportBookmarks, operation{tag: "bookmarks",
			summary: "Every bookmark, in the seed's bookmarks.json shape",
			responses: []response{{status: 200, desc: "bookmarks by ID", body: bookmark.File{},
				headers: map[string]string{"Content-Disposition": `attachment; filename="bookmarks.json"`}}}}},
		{"POST", "/api/bookmarks/import", h.importBookmarks, operation{tag: "bookmarks",
			summary:   "Import bookmarks in the seed's bookmarks.json shape",
			desc:      "Every entry is checked first; if one is bad nothing is kept. Entries whose ID is kept already are skipped. The body may be up to 16 MiB and hold up to 10000 bookmarks (413 beyond).",
			body:      bookmark.File{},
			responses: append([]response{ok(ImportResult{}, "how many were kept and skipped")}, errs(400, 413, 422)...)}},
		{"POST", "/api/bookmarks/remix", h.remix, operation{tag: "bookmarks",
			summary: "Start a spark run that builds on bookmarked ideas",
			desc:    "The bookmarks' improved ideas (or ideas) become the run's seed_ideas; topic and context default to the first bookmark's.",
			body:    RemixRequest{},
			responses: append([]response{{status: 202, desc: "queued", body: StartRunResponse{},
				headers: map[string]string{"Location": "the run's URL"}}}, errs(400, 404, 413, 422)...)}},
		{"GET", "/api/bookmarks/{id}", h.getBookmark, operation{tag: "bookmarks",
			summary:   "A bookmark",
			params:    []param{pathID("bookmark")},
			responses: append([]response{ok(madspark.Bookmark{}, "the bookmark")}, errs(404)...)}},
		{"PATCH", "/api/bookmarks/{id}", h.updateBookmark, operation{tag: "bookmarks",
			summary:   "Edit a bookmark's tags and notes",
			desc:      "The fields given are set (tags replace the bookmark's tags, [] removes them; notes replace its notes, \"\" removes them), those left out kept; a body with neither is a 422.",
			params:    []param{pathID("bookmark")},
			body:      UpdateBookmarkRequest{},
			responses: append([]response{ok(madspark.Bookmark{}, "the bookmark as stored")}, errs(400, 404, 413, 422)...)}},
		{"DELETE", "/api/bookmarks/{id}", h.deleteBookmark, operation{tag: "bookmarks",
			summary:   "Delete a bookmark",
			params:    []param{pathID("bookmark")},
			responses: append([]response{{status: 204, desc: "deleted"}}, errs(404)...)}},
		{"GET", "/api/conversations", h.listConversations, operation{tag: "conversations",
			summary:   "Conversations with the debate assistant, the most recently updated first, without their messages; and the models that answer them",
			params:    []param{queryParam("limit", "page size", map[string]any{"type": "integer", "minimum": 1, "maximum": 200, "default": 50}), offsetParam},
			responses: append([]response{ok(ConversationList{}, "a page of conversations")}, errs(400, 422)...)}},
		{"POST", "/api/conversations", h.createConversation, operation{tag: "conversations",
			summary: "Start a conversation",
			body:    CreateConversationRequest{},
			responses: append([]response{{status: 201, desc: "created", body: Conversation{},
				headers: map[string]string{"Location": "the conversation's URL"}}}, errs(400, 409, 413, 422)...)}},
		{"GET", "/api/conversations/{id}", h.getConversation, operation{tag: "conversations",
			summary:   "A conversation with its messages, oldest first; an answer names the run that made it (GET /api/runs/{id} says how)",
			params:    []param{pathID("conversation")},
			responses: append([]response{ok(Conversation{}, "the conversation")}, errs(404)...)}},
		{"PATCH", "/api/conversations/{id}", h.renameConversation, operation{tag: "conversations",
			summary:   "Rename a conversation",
			params:    []param{pathID("conversation")},
			body:      RenameConversationRequest{},
			responses: append([]response{ok(Conversation{}, "the renamed conversation")}, errs(400, 404, 413, 422)...)}},
		{"DELETE", "/api/conversations/{id}", h.deleteConversation, operation{tag: "conversations",
			summary:   "Delete a conversation and its messages (the runs that answered it are kept)",
			params:    []param{pathID("conversation")},
			responses: append([]response{{status: 204, desc: "deleted"}}, errs(404)...)}},
		{"POST", "/api/conversations/{id}/messages", h.postMessage, operation{tag: "conversations",
			summary: "Ask a question in a conversation; the answer streams as server-sent events",
			desc: "The question is kept, then answered by the model with the conversation's earlier exchanges as history (the last six answered ones, as in `madspark debate`), recorded as a run. " +
				"Events: question (data: the kept ChatMessage), delta (data: ChatDelta, the answer's next piece, in order), retry (data: ChatRetry, a call that failed with an error that may pass and is sent again after a pause), then answer (data: the kept ChatMessage, with its run_id) or error (data: ErrorBody). " +
				"Closing the connection stops the run and its model calls; the question stays, unanswered (see regenerate), and what was written of the answer is kept as a message of role stopped. The answer's run is tagged chat:ID (its parent in GET /api/runs). A conversation without a title takes the start of its first question.",
			params: []param{pathID("conversation")},
			body:   PostMessageRequest{},
			responses: append([]response{{status: 200, desc: "the answer's event stream",
				content: map[string]map[string]any{"text/event-stream": {"schema": map[string]any{"type": "string"}}}}}, errs(400, 404, 409, 413, 422)...)}},
		{"POST", "/api/conversations/{id}/regenerate", h.regenerate, operation{tag: "conversations",
			summary: "Answer a conversation's last question again, replacing its answer; streamed as for a new question",
			params:  []param{pathID("conversation")},
			body:    RegenerateRequest{},
			responses: append([]response{{status: 200, desc: "the answer's event stream (question, delta…, answer or error)",
				content: map[string]map[string]any{"text/event-stream": {"schema": map[string]any{"type": "string"}}}}}, errs(400, 404, 409, 413, 422)...)}},
		{"GET", "/api/temperature-presets", h.temperaturePresets, operation{tag: "pipelines",
			summary:   "spark's temperature presets, per role",
			responses: []response{ok(Presets{}, "the presets, and the one spark's defaults are")}}},
		{"GET", "/api/provider", h.providerStatus, operation{tag: "health",
			summary:   "The model provider this server calls, and whether its calls go through now",
			desc:      "state is paused while the circuit breaker holds calls back after failures in a row (until retry_at; a run or answer started meanwhile fails at once), trial once that time has passed (the next call decides), else ok. local says whether the provider is a server on this machine or its network rather than a vendor's API. Cheap enough to poll.",
			responses: []response{ok(ProviderStatus{}, "the provider and the state of its calls")}}},
		{"GET", "/health/detailed", h.healthDetailed, operation{tag: "health",
			summary: "Provider, database, cache, queue, the last run and the error rate over the last hour",
			responses: []response{ok(HealthDetailed{}, "ok or degraded"),
				{status: 503, desc: "down: the database cannot be reached", body: HealthDetailed{}}}}},
		{"GET", "/api/openapi.json", h.openAPI, operation{tag: "health",
			summary:   "This document",
			responses: []response{{status: 200, desc: "an OpenAPI 3.1 document", content: map[string]map[string]any{"application/json": {"schema": map[string]any{"type": "object"}}}}}}},
	}
}

// serverRoutes documents the routes package server serves itself.
var serverRoutes = []route{
	{"GET", "/health", nil, operation{tag: "health", summary: "Liveness, without authentication",
		responses: []response{{status: 200, desc: "ok", content: map[string]map[string]any{"application/json": {"schema": map[string]any{
			"type": "object", "required": []string{"status"}, "properties": map[string]any{
				"status": map[string]any{"type": "string"}, "version": map[string]any{"type": "string"},
				"models": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}}}}}}},
	{"GET", "/metrics", nil, operation{tag: "health", summary: "Prometheus metrics",
		responses: []response{{status: 200, desc: "metrics in Prometheus's text format", content: map[string]map[string]any{"text/plain": {"schema": map[string]any{"type": "string"}}}}}}},
	{"GET", "/v1/models", nil, operation{tag: "openai", summary: "The models (pipelines) served, in OpenAI's list format",
		responses: []response{{status: 200, desc: "the models", content: openAIJSON()}}}},
	{"GET", "/v1/models/{model}", nil, operation{tag: "openai", summary: "One model",
		params:    []param{{name: "model", in: "path", required: true, desc: "the model's ID, such as madspark-debate", schema: map[string]any{"type": "string"}}},
		responses: []response{{status: 200, desc: "the model", content: openAIJSON()}, {status: 404, desc: "no such model", content: openAIJSON()}}}},
	{"POST", "/v1/chat/completions", nil, operation{tag: "openai", summary: "OpenAI's chat completions, plain or streamed (SSE)",
		desc: "model madspark-debate (routed), madspark-direct, or madspark-PIPELINE for every pipeline that takes one line of text (the last user message); the answer is the run's Markdown. Errors are OpenAI's {error: {message, type, param, code}}.",
		responses: []response{
			{status: 200, desc: "a chat.completion, or with stream true a stream of chat.completion.chunk events", content: map[string]map[string]any{
				"application/json":  {"schema": map[string]any{"type": "object"}},
				"text/event-stream": {"schema": map[string]any{"type": "string"}}}},
			{status: 400, desc: "invalid request", content: openAIJSON()},
			{status: 404, desc: "no such model", content: openAIJSON()},
			{status: 413, desc: "request body too large", content: openAIJSON()},
		}}},
	{"POST", "/v1/responses", nil, operation{tag: "openai", summary: "OpenAI's Responses API, plain or streamed (SSE)",
		desc: "The models of /v1/chat/completions. input is a string or a list of messages (system, developer, user, assistant; text parts), " +
			"instructions the client's own; temperature, top_p, max_output_tokens and text.format (json_schema or json_object) apply to the call " +
			"that writes the answer. Responses are not stored: previous_response_id and conversation are refused. With stream true the events are " +
			"response.created, response.in_progress, response.output_item.added, response.content_part.added, response.output_text.delta…, " +
			"response.output_text.done, response.content_part.done, response.output_item.done, then response.completed (response.incomplete when " +
			"cut off at max_output_tokens; response.failed when the model fails after the stream started).",
		bodyContent: map[string]map[string]any{"application/json": {"schema": map[string]any{
			"type": "object", "required": []string{"model", "input"},
			"properties": map[string]any{
				"model":             map[string]any{"type": "string"},
				"input":             map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "array", "items": map[string]any{"type": "object"}}}},
				"instructions":      map[string]any{"type": "string"},
				"stream":            map[string]any{"type": "boolean"},
				"temperature":       map[string]any{"type": "number", "minimum": 0, "maximum": 2},
				"top_p":             map[string]any{"type": "number", "minimum": 0, "maximum": 1},
				"max_output_tokens": map[string]any{"type": "integer", "minimum": 1},
				"text":              map[string]any{"type": "object", "properties": map[string]any{"format": map[string]any{"type": "object"}}},
			}}}},
		responses: []response{
			{status: 200, desc: "a response object, or with stream true a stream of Responses events", content: map[string]map[string]any{
				"application/json":  {"schema": map[string]any{"type": "object", "required": []string{"id", "object", "status", "output"}}},
				"text/event-stream": {"schema": map[string]any{"type": "string"}}}},
			{status: 400, desc: "invalid request, or a setting the model cannot apply (named in param)", content: openAIJSON()},
			{status: 404, desc: "no such model", content: openAIJSON()},
			{status: 413, desc: "request body too large", content: openAIJSON()},
		}}},
}

func openAIJSON() map[string]map[string]any {
	return map[string]map[string]any{"application/json": {"schema": map[string]any{"type": "object"}}}
}

// OpenAPI returns the OpenAPI 3.1 document of the API and of the server's
// own routes, as JSON.
func (h *Handler) OpenAPI() ([]byte, error) {
	h.docOnce.Do(func() { h.doc, h.docErr = h.buildOpenAPI() })
	return h.doc, h.docErr
}

func (h *Handler) openAPI(w http.ResponseWriter, _ *http.Request) error {
	doc, err := h.OpenAPI()
	if err != nil {
		return err
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Cache-Control", "no-cache")
	_, _ = w.Write(doc)
	return nil
}

// schemas reflects Go types into the document's components.
type schemas struct {
	r    *jsonschema.Reflector
	defs map[string]any
}

func newSchemas() *schemas {
	r := &jsonschema.Reflector{Anonymous: true, Namer: typeName, AdditionalFields: encodedFields}
	return &schemas{r: r, defs: map[string]any{}}
}

// encodedFields are the fields a type's JSON encoding adds to its struct's:
// llm.Usage's "priced", in Usage and in the types that embed it.
func encodedFields(t reflect.Type) []reflect.StructField {
	usage := reflect.TypeFor[llm.Usage]()
	embeds := false
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			embeds = embeds || (t.Field(i).Anonymous && t.Field(i).Type == usage)
		}
	}
	if t == usage || embeds {
		return []reflect.StructField{{Name: "Priced", Type: reflect.TypeFor[bool](), Tag: `json:"priced"`}}
	}
	return nil
}

// typeName names a component: the type's name for the API's and the root
// package's types, prefixed with its package's otherwise
// (spark.Candidate: SparkCandidate).
func typeName(t reflect.Type) string {
	pkg := t.PkgPath()
	if pkg == "github.com/madspark/madspark" || pkg == "github.com/madspark/madspark/api" || pkg == "" {
		return t.Name()
	}
	base := pkg[strings.LastIndex(pkg, "/")+1:]
	r := []rune(base)
	r[0] = unicode.ToUpper(r[0])
	return string(r) + t.Name()
}

// ref returns a reference to v's type's schema, adding it and the types it
// uses to the components.
func (s *schemas) ref(v any) map[string]any {
	sc := s.r.Reflect(v)
	raw, err := json.Marshal(sc)
	if err != nil {
		panic(fmt.Sprintf("api: schema of %T: %v", v, err))
	}
	text := strings.ReplaceAll(string(raw), `"#/$defs/`, `"#/components/schemas/`)
	var m map[string]any
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		panic(fmt.Sprintf("api: schema of %T: %v", v, err))
	}
	if defs, ok := m["$defs"].(map[string]any); ok {
		for k, d := range defs {
			s.defs[k] = d
		}
	}
	delete(m, "$defs")
	delete(m, "$schema")
	if _, ok := m["$ref"]; ok {
		return map[string]any{"$ref": m["$ref"]}
	}
	return m
}

// documented are the API's routes and the server's, as documented.
func (h *Handler) documented() []route {
	out := append(append([]route{}, h.routes...), serverRoutes...)
	if h.cfg.WebUI {
		out = append(out, route{"GET", "/", nil, operation{tag: "health", summary: "The web UI",
			desc:      "The single-page application; its own routes (/runs/ID, /bookmarks) answer with the same page.",
			responses: []response{{status: 200, desc: "the page", content: map[string]map[string]any{"text/html; charset=utf-8": {"schema": map[string]any{"type": "string"}}}}}}})
	}
	return out
}

func (h *Handler) buildOpenAPI() (doc []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	s := newSchemas()
	s.ref(export.Envelope{})
	s.ref(batch.Results{}) // a batch's results as JSON
	s.ref(Message{})       // the data of the progress streams' events and frames
	s.ref(Batch{})         // the data of a batch's progress events
	s.ref(ChatDelta{})     // the data of a conversation's answer stream
	s.ref(ChatRetry{})
	s.ref(RunRetry{}) // the data of a run's retry messages
	s.ref(madspark.ChatMessage{})
	paths := map[string]map[string]any{}
	for _, rt := range h.documented() {
		op := map[string]any{
			"operationId": operationID(rt.method, rt.path),
			"summary":     rt.doc.summary,
			"tags":        []string{rt.doc.tag},
		}
		if rt.doc.desc != "" {
			op["description"] = rt.doc.desc
		}
		var params []map[string]any
		for _, p := range rt.doc.params {
			pm := map[string]any{"name": p.name, "in": p.in, "schema": p.schema}
			if p.desc != "" {
				pm["description"] = p.desc
			}
			if p.required {
				pm["required"] = true
			}
			if p.schema["type"] == "array" {
				pm["style"], pm["explode"] = "form", true
			}
			params = append(params, pm)
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.doc.body != nil {
			op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": s.ref(rt.doc.body)}}}
		}
		if rt.doc.bodyContent != nil {
			op["requestBody"] = map[string]any{"required": true, "content": rt.doc.bodyContent}
		}
		responses := map[string]any{}
		resps := rt.doc.responses
		errBody := func(status int, desc string) response {
			if strings.HasPrefix(rt.path, "/v1/") {
				return response{status: status, desc: desc, content: openAIJSON()}
			}
			return response{status: status, desc: desc, body: ErrorBody{}}
		}
		if strings.HasPrefix(rt.path, "/api/") || strings.HasPrefix(rt.path, "/ws/") || strings.HasPrefix(rt.path, "/v1/") || rt.path == "/health/detailed" {
			r429 := errBody(429, "rate limited (or, for a run, its provider is busy with as many calls as allowed): retry after Retry-After seconds")
			r429.headers = map[string]string{"Retry-After": "seconds to wait"}
			resps = append(append([]response{}, resps...), r429)
		}
		resps = append(append([]response{}, resps...), errBody(421, "the Host header names another host than this server's (when it has no token)"))
		if (rt.method != "GET" || rt.stream()) && !slices.ContainsFunc(resps, func(r response) bool { return r.status == 403 }) {
			resps = append(resps, errBody(403, "sent by a page of another origin than the server's and its allowed origins"))
		}
		if rt.doc.body != nil || rt.doc.bodyContent != nil || rt.path == "/v1/chat/completions" {
			resps = append(resps, errBody(415, "the body is not declared as application/json"))
		}
		if rt.path != "/health" && rt.path != "/" {
			resps = append(append([]response{}, resps...), response{status: 401, desc: "missing or wrong bearer token (when the server has one)",
				content: map[string]map[string]any{"application/json": {"schema": map[string]any{"type": "object", "required": []string{"error"}}}}})
		}
		for _, resp := range resps {
			rm := map[string]any{"description": resp.desc}
			switch {
			case resp.body != nil:
				rm["content"] = map[string]any{"application/json": map[string]any{"schema": s.ref(resp.body)}}
			case resp.content != nil:
				rm["content"] = resp.content
			}
			if len(resp.headers) > 0 {
				hs := map[string]any{}
				for name, d := range resp.headers {
					hs[name] = map[string]any{"description": d, "schema": map[string]any{"type": "string"}}
				}
				rm["headers"] = hs
			}
			responses[strconv.Itoa(resp.status)] = rm
		}
		op["responses"] = responses
		if paths[rt.path] == nil {
			paths[rt.path] = map[string]any{}
		}
		paths[rt.path][strings.ToLower(rt.method)] = op
	}
	var tags []map[string]any
	for _, t := range []struct{ name, desc string }{
		{"pipelines", "What can be run"},
		{"runs", "Start, list, follow, cancel and export runs"},
		{"batches", "Batches: every row of a CSV or JSON file as a run, followed together"},
		{"progress", "A run's or a batch's progress, live"},
		{"evals", "Pipelines measured against a single call"},
		{"bookmarks", "Ideas kept, checked for duplicates, searched, remixed"},
		{"conversations", "Conversations with the debate assistant, answered as they are written"},
		{"health", "Health and this document"},
		{"openai", "The OpenAI-compatible endpoints"},
	} {
		tags = append(tags, map[string]any{"name": t.name, "description": t.desc})
	}
	d := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "madspark",
			"version":     h.cfg.Info.Version,
			"description": "Multi-agent LLM pipelines: runs, their live progress, exports and bookmarks, and an OpenAI-compatible chat API. Errors are JSON: {\"error\": {\"message\", \"type\", \"field\"}}.",
		},
		"tags":  tags,
		"paths": paths,
		"components": map[string]any{
			"schemas":         s.defs,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "MADSPARK_API_TOKEN; required when the server has one (it must when it listens beyond loopback)"}},
		},
		// Without a token configured no authentication is needed.
		"security": []map[string]any{{}, {"bearer": []string{}}},
	}
	return json.MarshalIndent(d, "", "  ")
}

// operationID is a route's operation ID, such as getApiRunsId.
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	up := true
	for _, r := range path {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if up {
				r = unicode.ToUpper(r)
			}
			b.WriteRune(r)
			up = false
			continue
		}
		up = true
	}
	return b.String()
}

// Documented lists every documented route: the API's and the server's,
// sorted.
func (h *Handler) Documented() []Route {
	var out []Route
	for _, rt := range h.documented() {
		out = append(out, Route{rt.method, rt.path})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out
}
