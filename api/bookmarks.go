package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/bookmark"
)

// Duplicates are the kept bookmarks like a new one, and what to do.
type Duplicates = bookmark.Duplicates

// CreateBookmarkRequest is the body of POST /api/bookmarks: bookmark idea
// candidate_index of run run_id.
type CreateBookmarkRequest struct {
	RunID          string `json:"run_id"`
	CandidateIndex int    `json:"candidate_index"`
	// Tags label the bookmark; left out, the run's tags.
	Tags  *[]string `json:"tags,omitempty" input:"line"`
	Notes string    `json:"notes,omitempty"`
	// Force keeps the bookmark even when a near-identical one is kept.
	Force bool `json:"force,omitempty"`
}

// CreateBookmarkResponse is the answer of POST /api/bookmarks.
type CreateBookmarkResponse struct {
	Bookmark   *madspark.Bookmark `json:"bookmark"`
	Duplicates *Duplicates        `json:"duplicates"`
}

func (h *Handler) createBookmark(w http.ResponseWriter, r *http.Request) error {
	var req CreateBookmarkRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	if req.RunID == "" {
		return unprocessable("run_id", "run_id is required")
	}
	if utf8.RuneCountInString(req.Notes) > bookmark.MaxNotesLen {
		return unprocessable("notes", "notes are at most %d characters", bookmark.MaxNotesLen)
	}
	var tags []string
	if req.Tags != nil {
		var err error
		if tags, err = checkTags("tags", *req.Tags); err != nil {
			return err
		}
	}
	rec, err := h.cfg.Store.Run(r.Context(), req.RunID)
	if errors.Is(err, madspark.ErrNotFound) {
		return errorf(http.StatusNotFound, typeNotFound, "run_id", "no run %s", req.RunID)
	}
	if err != nil {
		return err
	}
	def, err := h.cfg.Registry.Get(rec.Pipeline)
	if err != nil {
		return unprocessable("run_id", "%v", err)
	}
	b, err := bookmark.FromRun(def, rec, req.CandidateIndex, tags, req.Notes)
	switch {
	case errors.Is(err, bookmark.ErrNoResult):
		return conflict("%v", err)
	case errors.Is(err, bookmark.ErrNoIdeas):
		return unprocessable("run_id", "%v", err)
	case errors.Is(err, bookmark.ErrIndex):
		return unprocessable("candidate_index", "%v", err)
	case err != nil:
		return err
	}
	dups, err := bookmark.Save(r.Context(), h.cfg.Store, b, req.Force)
	if de, ok := errors.AsType[*bookmark.DuplicateError](err); ok {
		e := conflict("%v; send force: true to keep it anyway", de)
		e.dups = de.Duplicates
		return e
	}
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/bookmarks/"+b.ID)
	writeJSON(w, http.StatusCreated, CreateBookmarkResponse{Bookmark: b, Duplicates: dups})
	return nil
}

// CheckRequest is the body of POST /api/bookmarks/check.
type CheckRequest struct {
	IdeaText string `json:"idea_text"`
	Topic    string `json:"topic,omitempty"`
}

func (h *Handler) checkBookmark(w http.ResponseWriter, r *http.Request) error {
	var req CheckRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.IdeaText) == "" {
		return unprocessable("idea_text", "idea_text is required")
	}
	if utf8.RuneCountInString(req.IdeaText) > bookmark.MaxTextLen {
		return unprocessable("idea_text", "idea_text is at most %d characters", bookmark.MaxTextLen)
	}
	dups, err := bookmark.Check(r.Context(), h.cfg.Store, req.IdeaText, req.Topic)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, dups)
	return nil
}

// BookmarkPage is a page of bookmarks, newest first, and how many match.
type BookmarkPage struct {
	Bookmarks  []*madspark.Bookmark `json:"bookmarks"`
	Total      int                  `json:"total"`
	NextOffset *int                 `json:"next_offset" jsonschema:"nullable"`
}

// bookmarkFilter reads the tag, limit and offset query parameters.
func bookmarkFilter(r *http.Request) (madspark.BookmarkFilter, error) {
	var f madspark.BookmarkFilter
	tags, err := checkTags("tag", r.URL.Query()["tag"])
	if err != nil {
		return f, err
	}
	f.Tags = tags
	f.RunID = strings.TrimSpace(r.URL.Query().Get("run_id"))
	if f.Limit, err = queryInt(r, "limit", 20, 1, 100); err != nil {
		return f, err
	}
	if f.Offset, err = queryInt(r, "offset", 0, 0, 1_000_000); err != nil {
		return f, err
	}
	return f, nil
}

func (h *Handler) writeBookmarks(w http.ResponseWriter, r *http.Request, f madspark.BookmarkFilter) error {
	bs, total, err := h.cfg.Store.Bookmarks(r.Context(), f)
	if err != nil {
		return err
	}
	out := BookmarkPage{Bookmarks: bs, Total: total}
	if next := f.Offset + len(bs); len(bs) > 0 && next < total {
		out.NextOffset = &next
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) listBookmarks(w http.ResponseWriter, r *http.Request) error {
	f, err := bookmarkFilter(r)
	if err != nil {
		return err
	}
	return h.writeBookmarks(w, r, f)
}

func (h *Handler) searchBookmarks(w http.ResponseWriter, r *http.Request) error {
	f, err := bookmarkFilter(r)
	if err != nil {
		return err
	}
	f.Query = strings.TrimSpace(r.URL.Query().Get("q"))
	switch {
	case f.Query == "":
		return unprocessable("q", "q is required: the text to look for in topic, context and ideas")
	case utf8.RuneCountInString(f.Query) > 200:
		return unprocessable("q", "q is at most 200 characters")
	}
	return h.writeBookmarks(w, r, f)
}

func (h *Handler) getBookmark(w http.ResponseWriter, r *http.Request) error {
	b, err := h.cfg.Store.Bookmark(r.Context(), r.PathValue("id"))
	if errors.Is(err, madspark.ErrNotFound) {
		return notFound("no bookmark %s", r.PathValue("id"))
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

// UpdateBookmarkRequest is the body of PATCH /api/bookmarks/{id}: the
// fields given are set, those left out kept.
type UpdateBookmarkRequest struct {
	// Tags replace the bookmark's tags; [] removes them all.
	Tags *[]string `json:"tags,omitempty" input:"line"`
	// Notes replace the bookmark's notes; "" removes them.
	Notes *string `json:"notes,omitempty"`
}

func (h *Handler) updateBookmark(w http.ResponseWriter, r *http.Request) error {
	var req UpdateBookmarkRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	if req.Tags == nil && req.Notes == nil {
		return unprocessable("", "nothing to change: send tags, notes or both")
	}
	if req.Notes != nil && utf8.RuneCountInString(*req.Notes) > bookmark.MaxNotesLen {
		return unprocessable("notes", "notes are at most %d characters", bookmark.MaxNotesLen)
	}
	id := r.PathValue("id")
	b, err := h.cfg.Store.Bookmark(r.Context(), id)
	if errors.Is(err, madspark.ErrNotFound) {
		return notFound("no bookmark %s", id)
	}
	if err != nil {
		return err
	}
	tags, notes := b.Tags, b.Notes
	if req.Tags != nil {
		if tags, err = checkTags("tags", *req.Tags); err != nil {
			return err
		}
	}
	if req.Notes != nil {
		notes = strings.TrimSpace(*req.Notes)
	}
	b, err = h.cfg.Store.UpdateBookmark(r.Context(), id, tags, notes)
	if errors.Is(err, madspark.ErrNotFound) {
		return notFound("no bookmark %s", id)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}

func (h *Handler) deleteBookmark(w http.ResponseWriter, r *http.Request) error {
	err := h.cfg.Store.DeleteBookmark(r.Context(), r.PathValue("id"))
	if errors.Is(err, madspark.ErrNotFound) {
		return notFound("no bookmark %s", r.PathValue("id"))
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// RemixRequest is the body of POST /api/bookmarks/remix: a spark run that
// builds on the bookmarked ideas.
type RemixRequest struct {
	BookmarkIDs []string `json:"bookmark_ids"`
	// Topic and Context default to the first bookmark's.
	Topic   string `json:"topic,omitempty"`
	Context string `json:"context,omitempty"`
	// Params are more spark parameters (num_candidates, ...).
	Params json.RawMessage `json:"params,omitempty"`
	Tags   []string        `json:"tags,omitempty" input:"line"`
}

func (h *Handler) remix(w http.ResponseWriter, r *http.Request) error {
	var req RemixRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	switch {
	case len(req.BookmarkIDs) == 0:
		return unprocessable("bookmark_ids", "bookmark_ids must name at least one bookmark")
	case len(req.BookmarkIDs) > bookmark.MaxRemix:
		return unprocessable("bookmark_ids", "a remix builds on at most %d bookmarks, got %d", bookmark.MaxRemix, len(req.BookmarkIDs))
	}
	var bs []*madspark.Bookmark
	for i, id := range req.BookmarkIDs {
		b, err := h.cfg.Store.Bookmark(r.Context(), id)
		if errors.Is(err, madspark.ErrNotFound) {
			return errorf(http.StatusNotFound, typeNotFound, fmt.Sprintf("bookmark_ids[%d]", i), "no bookmark %s", id)
		}
		if err != nil {
			return err
		}
		bs = append(bs, b)
	}
	params, err := RemixParams(bs, req.Topic, req.Context, req.Params)
	if err != nil {
		return err
	}
	rec, err := h.enqueue(r.Context(), StartRunRequest{Pipeline: "spark", Params: params, Tags: req.Tags})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/runs/"+rec.ID)
	writeJSON(w, http.StatusAccepted, StartRunResponse{RunID: rec.ID, Status: rec.Status, Links: runLinks(rec.ID)})
	return nil
}

// RemixParams are the spark parameters of a remix of bs: extra (a JSON
// object of spark parameters, or empty) with topic and context (the first
// bookmark's when empty) and seed_ideas set.
func RemixParams(bs []*madspark.Bookmark, topic, context string, extra json.RawMessage) (json.RawMessage, error) {
	p := map[string]json.RawMessage{}
	if len(extra) > 0 && string(extra) != "null" {
		if err := json.Unmarshal(extra, &p); err != nil || p == nil {
			return nil, invalid("params", "params must be a JSON object of spark parameters")
		}
	}
	if _, ok := p["seed_ideas"]; ok {
		return nil, unprocessable("params.seed_ideas", "a remix sets seed_ideas from its bookmarks")
	}
	set := func(key, value, fallback string) {
		if _, ok := p[key]; ok && value == "" {
			return // given in params
		}
		if value == "" {
			value = fallback
		}
		p[key], _ = json.Marshal(value)
	}
	set("topic", topic, bs[0].Topic)
	set("context", context, bs[0].Context)
	p["seed_ideas"], _ = json.Marshal(bookmark.SeedIdeas(bs))
	return json.Marshal(p)
}

func (h *Handler) exportBookmarks(w http.ResponseWriter, r *http.Request) error {
	f, err := bookmark.Export(r.Context(), h.cfg.Store)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Disposition", `attachment; filename="bookmarks.json"`)
	writeJSON(w, http.StatusOK, f)
	return nil
}

// ImportResult is the answer of POST /api/bookmarks/import.
type ImportResult struct {
	Imported int `json:"imported"`
	Skipped  int `json:"skipped"`
}

func (h *Handler) importBookmarks(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxImportBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return errorf(http.StatusRequestEntityTooLarge, typeTooLarge, "", "a bookmarks file is at most %d bytes", h.cfg.MaxImportBytes)
		}
		return invalid("", "could not read the request body")
	}
	f, err := bookmark.Parse(body)
	if err != nil {
		field := ""
		if fe, ok := errors.AsType[*bookmark.FieldError](err); ok {
			field = fe.Field
		}
		return invalid(field, "%v", err)
	}
	if len(f) > h.cfg.MaxImportItems {
		return errorf(http.StatusRequestEntityTooLarge, typeTooLarge, "", "a bookmarks import holds at most %d bookmarks, got %d", h.cfg.MaxImportItems, len(f))
	}
	imported, skipped, err := bookmark.Import(r.Context(), h.cfg.Store, f)
	if fe, ok := errors.AsType[*bookmark.FieldError](err); ok {
		return unprocessable(fe.Field, "%v", err)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ImportResult{Imported: imported, Skipped: skipped})
	return nil
}
