package proposal

import (
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/provider/mock"
)

func TestDocumentOfARefinedProposal(t *testing.T) {
	r := runProposal(t, mock.New(MockResponders()), offline(), params(4, nil))
	if r.err != nil {
		t.Fatal(r.err)
	}
	meta := Meta{RunID: "run-1", Mock: true, Provider: "mock", Model: "mock-1", Date: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)}
	d := r.res.Document(meta)
	var labels []string
	for _, h := range document.Headings(d) {
		if h.Level == 1 {
			labels = append(labels, h.Label())
		}
	}
	want := "1 Research problem|2 Literature review|3 Objectives|4 Methodology|5 Data collection plan|Appendix A: Quality control|Appendix B: Researcher profile"
	if strings.Join(labels, "|") != want {
		t.Errorf("sections %q", labels)
	}
	if !strings.HasPrefix(d.Notice, "MOCK DATA") || strings.Contains(d.Notice, "NOT PASSED") || d.Title != r.res.Title || !d.Contents {
		t.Errorf("title %q notice %q", d.Title, d.Notice)
	}
	md := string(document.Markdown(d))
	for _, s := range []string{
		"> **MOCK DATA: generated offline",
		"Passed quality control: coherence",
		"1 May 2024 · run run-1 · mock/mock-1",
		"**RQ1 (main):** How does peer tutoring",
		"](https://example.org/mock-literature/",
		"| SO1 | Review the literature on peer tutoring",
		"| Total (of 26 weeks available) |",
		"**Estimated sample size:** 9 participants",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}
	// The refinement history shows both rounds.
	if !strings.Contains(md, "| 0 | problem\\_formulation, objectives, methodology, data\\_collection |") ||
		!strings.Contains(md, "| fail | data\\_collection, methodology |") || !strings.Contains(md, "| 1 | methodology, data\\_collection |") {
		t.Errorf("refinement history missing:\n%s", md[strings.Index(md, "Refinement history"):])
	}
	// Every cited entry is a link to its URL.
	for _, e := range r.res.ProblemDefinition.PreliminaryLiterature {
		if !strings.Contains(md, "("+e.URL+")") {
			t.Errorf("entry %d not linked", e.Ref)
		}
	}
	sum := r.res.Summary(meta)
	if !strings.Contains(sum, "Quality control: PASSED") || !strings.Contains(sum, "1 refinement(s)") || !strings.HasPrefix(sum, "MOCK DATA") {
		t.Errorf("summary %q", sum)
	}
}

func TestDocumentOfAFailedProposal(t *testing.T) {
	p := params(2, func(p *Params) {
		p.MaxRefinements = 1
		p.Profile.TotalTimeline = Timeline{Value: 4, Unit: Weeks}
		p.NoSearch = true
	})
	r := runProposal(t, mock.New(MockResponders()), offline(), p)
	if r.err != nil {
		t.Fatal(r.err)
	}
	d := r.res.Document(Meta{})
	if !strings.Contains(d.Notice, "NOT PASSED: this proposal did not pass quality control after 1 refinement (") {
		t.Errorf("notice %q", d.Notice)
	}
	md := string(document.Markdown(d))
	for _, s := range []string{"Did not pass quality control", "No literature search was run: literature search off (--no-search)", "No work is cited.", "| critical | problem\\_formulation |"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}
	if !strings.Contains(r.res.Summary(Meta{}), "NOT PASSED (feasibility 0.09 < 0.70, 1 critical issue(s))") {
		t.Errorf("summary %q", r.res.Summary(Meta{}))
	}
}
