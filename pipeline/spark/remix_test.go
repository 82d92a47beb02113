package spark

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/madspark/madspark/provider/mock"
)

// TestSeedIdeasReachTheGeneratePrompt: a remix's seed ideas are listed in
// the generate prompt, the mock builds on each, and a run with them still
// costs six calls; without seed ideas the prompt says nothing of them.
func TestSeedIdeasReachTheGeneratePrompt(t *testing.T) {
	seeds := []string{"Refined Rooftop Seed Library: swap heirloom seeds between buildings", "Compost Courier: bikes that collect kitchen scraps"}
	rec := &mock.Recorder{Next: mock.New(MockResponders())}
	res, _, err := runSpark(t, newStore(t), rec, params("urban farming", func(p *Params) { p.SeedIdeas = seeds }))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Requests()); n != 6 {
		t.Errorf("a remix made %d calls, want 6", n)
	}
	var prompt string
	for _, q := range rec.Requests() {
		if q.Agent == agentGenerate {
			prompt = q.Messages[len(q.Messages)-1].Content
		}
	}
	for _, s := range seeds {
		if !strings.Contains(prompt, "- "+s) {
			t.Errorf("generate prompt lacks seed idea %q:\n%s", s, prompt)
		}
	}
	if !strings.Contains(prompt, "Build on these ideas") {
		t.Errorf("generate prompt does not ask to build on the seeds:\n%s", prompt)
	}
	builds := 0
	for _, c := range res.Candidates {
		if strings.Contains(c.Idea, "Rooftop Seed Library") || strings.Contains(c.Idea, "Compost Courier") {
			builds++
		}
		if strings.Contains(c.Idea, "Refined Rooftop") {
			t.Errorf("a seed's Refined prefix leaked into a new idea: %q", c.Idea)
		}
	}
	if builds != len(res.Candidates) {
		t.Errorf("%d of %d mock candidates build on a seed idea", builds, len(res.Candidates))
	}

	rec = &mock.Recorder{Next: mock.New(MockResponders())}
	if _, _, err := runSpark(t, newStore(t), rec, params("urban farming", nil)); err != nil {
		t.Fatal(err)
	}
	for _, q := range rec.Requests() {
		if q.Agent == agentGenerate && strings.Contains(q.Messages[len(q.Messages)-1].Content, "Build on") {
			t.Errorf("a run without seed ideas mentions them:\n%s", q.Messages[len(q.Messages)-1].Content)
		}
	}
}

// TestSeedIdeasLeaveOtherJournalsAlone: without seed ideas the generate
// step's input hashes as it did before they existed, so that runs journaled
// earlier resume without paying again.
func TestSeedIdeasLeaveOtherJournalsAlone(t *testing.T) {
	b, err := json.Marshal(generateInput{Topic: "t", Context: "c", N: 5})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"Topic":"t","Context":"c","N":5}` {
		t.Errorf("generate input without seeds = %s", b)
	}
	sum := sha256.Sum256(b)
	with, _ := json.Marshal(generateInput{Topic: "t", Context: "c", N: 5, SeedIdeas: []string{"x"}})
	other := sha256.Sum256(with)
	if hex.EncodeToString(sum[:]) == hex.EncodeToString(other[:]) {
		t.Error("seed ideas do not change the generate step's hash")
	}
}

func TestSeedIdeasValidate(t *testing.T) {
	for _, tc := range []struct {
		seeds []string
		want  string
	}{
		{[]string{"a", "  "}, "seed_ideas[1] must not be empty"},
		{make([]string, 11), "at most 10"},
		{[]string{strings.Repeat("x", MaxSeedLen+1)}, "seed_ideas[0] is 2001 characters"},
		{[]string{"a\xffb"}, "not valid UTF-8"},
	} {
		p := params("t", func(p *Params) { p.SeedIdeas = tc.seeds })
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("seeds %q: Validate = %v, want %q", tc.seeds, err, tc.want)
		}
	}
	p := params("t", func(p *Params) { p.SeedIdeas = []string{"one", "two"} })
	if err := p.Validate(); err != nil {
		t.Errorf("valid seeds: %v", err)
	}
}
