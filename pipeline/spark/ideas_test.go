package spark

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
)

// Every generated idea is in the result: the candidates' originals with
// their rank, the other scored ideas, and the near-duplicates the novelty
// filter dropped with the idea they duplicate; the text and Markdown
// reports list the others.
func TestResultListsEveryGeneratedIdea(t *testing.T) {
	ideas := ideaList{Ideas: []Idea{
		{"Rooftop gardens", "Grow vegetables on the roofs of city apartment buildings."},
		{"Vertical farms", "Stack hydroponic trays inside disused warehouses."},
		{"Rooftop Gardens!", "Grow vegetables on the roofs of apartment buildings in the city."},
		{"Seed libraries", "Lend heirloom seeds from public libraries each spring."},
		{"Compost exchange", "Trade kitchen scraps for finished compost at weekly markets."},
	}}
	reply, _ := json.Marshal(ideas)
	base := mock.New(MockResponders())
	client := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		resp, err := base.Generate(ctx, req)
		if err == nil && req.Agent == agentGenerate {
			resp.Text = string(reply)
		}
		return resp, err
	})
	res, _, err := runSpark(t, newStore(t), client, params("urban farming", nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Generated != 5 || res.Filtered != 1 || len(res.Ideas) != 5 {
		t.Fatalf("generated %d filtered %d ideas %d", res.Generated, res.Filtered, len(res.Ideas))
	}
	dup := res.Ideas[2]
	if dup.DuplicateOf != "Rooftop gardens" || dup.Score != nil || dup.Candidate != 0 {
		t.Fatalf("duplicate %+v", dup)
	}
	ranks := map[int]bool{}
	var others []GeneratedIdea
	for i, g := range res.Ideas {
		if i == 2 {
			continue
		}
		if g.Score == nil || g.Critique == "" || g.DuplicateOf != "" {
			t.Fatalf("kept idea %d not scored: %+v", i, g)
		}
		if g.Candidate == 0 {
			others = append(others, g)
			continue
		}
		ranks[g.Candidate] = true
		c := res.Candidates[g.Candidate-1]
		if c.Idea != g.String() || c.InitialScore != *g.Score || c.InitialCritique != g.Critique {
			t.Fatalf("candidate %d is %q %.1f, idea %d is %q %.1f", g.Candidate, c.Idea, c.InitialScore, i, g.String(), *g.Score)
		}
	}
	if len(ranks) != 3 || len(others) != 1 {
		t.Fatalf("ranks %v others %v", ranks, others)
	}

	rep := NewReport(res, "run-1", "mock", "mock", "mock", llm.Usage{}, time.Second)
	var js bytes.Buffer
	if err := rep.Write(&js, "json"); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Ideas []map[string]any `json:"ideas"`
	}
	if err := json.Unmarshal(js.Bytes(), &out); err != nil || len(out.Ideas) != 5 || out.Ideas[2]["duplicate_of"] != "Rooftop gardens" || out.Ideas[0]["score"] == nil {
		t.Fatalf("json ideas %v (%v)", out.Ideas, err)
	}
	for _, format := range []string{"detailed", "markdown"} {
		var b bytes.Buffer
		if err := rep.Write(&b, format); err != nil {
			t.Fatal(err)
		}
		s := b.String()
		if !strings.Contains(s, "Other ideas generated") || !strings.Contains(s, `near-duplicate of "Rooftop gardens"`) || !strings.Contains(s, others[0].Title) {
			t.Errorf("%s does not list the other ideas:\n%s", format, s)
		}
	}

	// A result stored before ideas were kept reports an empty list.
	old := *res
	old.Ideas = nil
	if rep := NewReport(&old, "run-1", "mock", "mock", "mock", llm.Usage{}, 0); rep.Ideas == nil {
		t.Fatal("ideas nil")
	}
}
