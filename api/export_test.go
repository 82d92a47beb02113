package api_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document/pdf/pdftest"
)

// profile is a researcher's profile for the proposal pipeline.
var profile = map[string]any{
	"academic_program": "Master's", "field_of_study": "Education", "research_area": "peer tutoring in secondary schools",
	"weekly_hours": 10, "total_timeline": map[string]any{"value": 6, "unit": "months"},
	"existing_skills": []string{"surveys"}, "missing_skills": []string{"statistics"}, "constraints": []string{"no travel budget"},
	"additional_context": "A partner school.",
}

// TestExports: a run of every pipeline, exported in every format through
// the API: JSON in its envelope, CSV with every score as a column, and
// Markdown and PDF from the same document, each saying it is mock data.
func TestExports(t *testing.T) {
	hs := newHarness(t, options{workers: 4})
	for _, tc := range []struct {
		pipeline string
		params   map[string]any
		// key is text every format must show; columns are CSV columns
		// every row has a value in.
		key     string
		columns []string
	}{
		{"spark", map[string]any{"topic": "urban farming", "num_candidates": 4, "enhanced_reasoning": true, "logical_inference": true},
			"Refined", []string{"initial_score", "improved_score", "improved_idea", "feasibility", "improved_sustainability", "improved_weighted_score", "inference_conclusion"}},
		{"chaos", map[string]any{"prompt": "quiet streets", "seed": 7, "tournament": true},
			"quiet streets", []string{"status", "idea_name", "quality_score"}},
		{"debate", map[string]any{"query": "Compare B-trees and LSM trees for a write-heavy workload, step by step"},
			"LSM", []string{"kind", "role", "text"}},
		{"assess", map[string]any{"idea": "A subscription service for refurbished lab equipment", "mode": "analyze_review_and_judge"},
			"refurbished lab equipment", []string{"kind"}},
		{"proposal", map[string]any{"profile": profile},
			"peer tutoring", []string{"kind", "text"}},
	} {
		t.Run(tc.pipeline, func(t *testing.T) {
			run := hs.succeeded(tc.pipeline, tc.params)
			base := "/api/runs/" + run.RunID + "/export?format="
			name := regexp.MustCompile(`^attachment; filename="madspark-` + tc.pipeline + `-` + run.RunID[len(run.RunID)-8:] + `\.(json|csv|md|pdf)"$`)

			r := hs.do("GET", base+"json", nil)
			var env struct {
				RunID    string          `json:"run_id"`
				Pipeline string          `json:"pipeline"`
				Status   string          `json:"status"`
				Notice   string          `json:"notice"`
				Result   json.RawMessage `json:"result"`
			}
			r.json(t, &env)
			if env.RunID != run.RunID || env.Pipeline != tc.pipeline || env.Status != "succeeded" || !strings.HasPrefix(env.Notice, "MOCK DATA") ||
				!bytes.Equal(compact(t, env.Result), compact(t, run.Result)) || !name.MatchString(r.header.Get("Content-Disposition")) {
				t.Errorf("json export: %s", clip(r.body))
			}

			r = hs.do("GET", base+"csv", nil)
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") || !name.MatchString(r.header.Get("Content-Disposition")) {
				t.Fatalf("csv: %d %v", r.status, r.header)
			}
			rows, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
			if err != nil || len(rows) < 2 {
				t.Fatalf("csv: %v, %d rows", err, len(rows))
			}
			if rows[0][0] != "run_id" || rows[0][1] != "mode" {
				t.Errorf("csv header %v", rows[0])
			}
			for _, col := range tc.columns {
				i := slices.Index(rows[0], col)
				if i < 0 {
					t.Errorf("csv has no column %q: %v", col, rows[0])
					continue
				}
				for _, row := range rows[1:] {
					if row[i] == "" && !(tc.pipeline == "chaos" && row[slices.Index(rows[0], "status")] == "rejected") {
						t.Errorf("csv row has no %s: %v", col, row)
					}
				}
			}
			for _, row := range rows[1:] {
				if row[0] != run.RunID || row[1] != "mock" {
					t.Errorf("csv row does not say it is the mock run's: %v", row[:2])
				}
			}
			if !strings.Contains(string(r.body), tc.key) {
				t.Errorf("csv lacks %q", tc.key)
			}

			r = hs.do("GET", base+"markdown", nil)
			md := string(r.body)
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") || !strings.Contains(md, "MOCK DATA") ||
				!strings.Contains(md, tc.key) || !strings.HasPrefix(md, "# ") {
				t.Errorf("markdown: %d %s", r.status, clip(r.body))
			}

			r = hs.do("GET", base+"pdf", nil)
			if r.status != 200 || r.header.Get("Content-Type") != "application/pdf" || !bytes.HasPrefix(r.body, []byte("%PDF-")) || !name.MatchString(r.header.Get("Content-Disposition")) {
				t.Fatalf("pdf: %d %v", r.status, r.header)
			}
			path := filepath.Join(t.TempDir(), "x.pdf")
			if err := os.WriteFile(path, r.body, 0o644); err != nil {
				t.Fatal(err)
			}
			text := pdftest.Text(t, path)
			if !strings.Contains(text, "MOCK DATA") || !strings.Contains(text, tc.key) || pdftest.PageCount(t, path) < 1 {
				t.Errorf("pdf text: %.400s", text)
			}
			if tc.pipeline == "spark" && (!strings.Contains(text, "Multi-dimensional evaluation") || !strings.Contains(text, "Logical inference")) {
				t.Errorf("the spark pdf lacks the multi-dimensional or logical sections: %.600s", text)
			}
		})
	}

	// A run that did not succeed has only its JSON.
	hsq := newHarness(t, options{})
	id := hsq.startRun("spark", map[string]any{"topic": "x"})
	hsq.do("DELETE", "/api/runs/"+id, nil)
	r := hsq.do("GET", "/api/runs/"+id+"/export?format=json", nil)
	var env struct {
		Status string
		Error  string
	}
	r.json(t, &env)
	if r.status != 200 || env.Status != string(madspark.RunCancelled) || env.Error == "" {
		t.Errorf("json of a cancelled run: %d %s", r.status, r.body)
	}
	for _, f := range []string{"csv", "markdown", "pdf"} {
		if r := hsq.do("GET", "/api/runs/"+id+"/export?format="+f, nil); r.status != 409 {
			t.Errorf("%s of a cancelled run: %d %s", f, r.status, r.body)
		}
	}
	if r := hsq.do("GET", "/api/runs/"+id+"/export?format=docx", nil); r.status != 422 || r.err(t).Error.Field != "format" {
		t.Errorf("format docx: %d %s", r.status, r.body)
	}
}

func compact(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("%v: %s", err, clip(b))
	}
	return buf.Bytes()
}

// TestCSVIsSafeInASpreadsheet: a topic that a spreadsheet would run as a
// formula is exported as text.
func TestCSVIsSafeInASpreadsheet(t *testing.T) {
	hs := newHarness(t, options{})
	id := hs.sparkRun(`=HYPERLINK("http://evil.example","x")`)
	r := hs.do("GET", "/api/runs/"+id+"/export?format=csv", nil)
	rows, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	topic := slices.Index(rows[0], "topic")
	delta := slices.Index(rows[0], "score_delta")
	for _, row := range rows[1:] {
		if !strings.HasPrefix(row[topic], `'=HYPERLINK`) {
			t.Errorf("topic cell %q is not escaped", row[topic])
		}
		for _, cell := range row {
			if len(cell) > 0 && strings.ContainsRune("=+@", rune(cell[0])) {
				t.Errorf("cell %q starts a formula", cell)
			}
		}
		if strings.HasPrefix(row[delta], "'") {
			t.Errorf("a number was escaped: %q", row[delta])
		}
	}
}
