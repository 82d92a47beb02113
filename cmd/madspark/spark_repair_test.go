package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// sparkReply is liveReply answering a re-ask as the request it re-asks
// (liveReply reads the items from the last message, which a re-ask
// replaces), and without the markdown fence, so that flaws apply to every
// reply.
func sparkReply(req *openaitest.ChatRequest) openaitest.Reply {
	first := *req
	for i, m := range req.Messages {
		if m.Role == "user" {
			first.Messages = req.Messages[:i+1]
			break
		}
	}
	reply := liveReply(&first)
	reply.Content = strings.TrimSuffix(strings.TrimPrefix(reply.Content, "```json\n"), "\n```")
	return reply
}

func liveEnv(t *testing.T, url string) map[string]string {
	return map[string]string{
		"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-test", "MADSPARK_MODEL": "m",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"),
	}
}

// TestSparkRepairsImperfectReplies: a spark run whose every agent answers
// imperfectly but usably (too few ideas, indices from 1, a number as text,
// an item missing even after a re-ask) succeeds through the CLI, and its
// JSON output, its stored record and its summary line carry the repairs.
func TestSparkRepairsImperfectReplies(t *testing.T) {
	always := openaitest.Always
	srv := openaitest.NewServer(t, openaitest.Imperfect(sparkReply, map[string][]openaitest.Flaw{
		"spark_ideas":        {openaitest.Keep("ideas", 4), always},
		"spark_evaluations":  {openaitest.Add("evaluations/*/index", 1), openaitest.AsText("evaluations/0/score")},
		"spark_advocacy":     {openaitest.Drop("advocacies", 1), always},
		"spark_skepticism":   {openaitest.AsText("skepticisms/*/index")},
		"spark_improvements": {openaitest.Drop("improvements", 0), always},
	}))
	env := liveEnv(t, srv.URL)
	r := invoke(t, env, "urban farming", "cheap", "--output-format", "json", "--no-novelty-filter")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	var out struct {
		RunID      string           `json:"run_id"`
		Generated  int              `json:"generated"`
		Candidates []map[string]any `json:"candidates"`
		Repairs    []llm.Repair     `json:"repairs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, rp := range out.Repairs {
		if rp.Step == "" || rp.Action == "" {
			t.Errorf("repair without step or action: %+v", rp)
		}
		got[rp.Agent+" "+rp.Rule]++
	}
	want := map[string]int{
		"spark.generate count": 1, "spark.evaluate index": 1, "spark.evaluate type": 1,
		"spark.advocate index": 1, "spark.skeptic type": 3, "spark.improve index": 1,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("repairs %v, want %v\n%+v", got, want, out.Repairs)
	}
	// 6 steps; generate, advocate and improve re-asked once.
	if n := len(srv.Requests()); n != 9 || out.Generated != 4 || len(out.Candidates) != 3 {
		t.Fatalf("%d calls, %d ideas, %d candidates", n, out.Generated, len(out.Candidates))
	}
	if c := out.Candidates[0]; c["improved_idea"] != c["idea"] || c["initial_score"].(float64) != 7 {
		t.Fatalf("first candidate %v", c)
	}
	if c := out.Candidates[1]; c["advocacy"] != "" || !strings.HasPrefix(c["improved_idea"].(string), "Better idea 1") {
		t.Fatalf("second candidate %v", c)
	}
	show := invoke(t, env, "runs", "show", out.RunID, "--output-format", "brief")
	if show.code != 0 || !strings.HasSuffix(lastLine(show.stdout), fmt.Sprintf("; %d repairs", len(out.Repairs))) {
		t.Fatalf("summary line %q lacks the repair count", lastLine(show.stdout))
	}
}

// TestHardFailureResumesOnHealthyProvider: a run failed by a reply with no
// usable content (no JSON, twice) is resumed, with the response cache on,
// once the provider is healthy: the failed step asks the provider again
// rather than replaying the failed reply from the cache, and the run
// succeeds. The same with resume --no-cache.
func TestHardFailureResumesOnHealthyProvider(t *testing.T) {
	for _, flags := range [][]string{nil, {"--no-cache"}} {
		t.Run(fmt.Sprint("resume", flags), func(t *testing.T) {
			var healthy atomic.Bool
			srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
				if !healthy.Load() && req.ResponseFormat.JSONSchema.Name == "spark_improvements" {
					return openaitest.Reply{Content: "I would improve them all by making them cheaper."}
				}
				return sparkReply(req)
			})
			env := liveEnv(t, srv.URL)
			failed := invoke(t, env, "urban farming", "cheap", "--output-format", "json", "--quiet")
			if failed.code != 1 || !strings.Contains(failed.stderr, "stage improve") || !strings.Contains(failed.stderr, "no JSON") {
				t.Fatalf("exit %d, stderr %q", failed.code, failed.stderr)
			}
			id := strings.Fields(strings.TrimPrefix(failed.stderr, "madspark: run "))[0]
			before := len(srv.Requests())
			if before != 6 { // generate, evaluate, advocate, skeptic, improve twice
				t.Fatalf("%d calls before the failure", before)
			}

			healthy.Store(true)
			args := append([]string{"resume", id, "--output-format", "json"}, flags...)
			rep := decode(t, invoke(t, env, args...))
			if rep.RunID != id || len(rep.Candidates) != 3 || !strings.HasPrefix(rep.Candidates[0]["improved_idea"].(string), "Better idea 0") {
				t.Fatalf("resumed report %+v", rep)
			}
			var names []string
			for _, q := range srv.Requests()[before:] {
				names = append(names, q.ResponseFormat.JSONSchema.Name)
			}
			if strings.Join(names, ",") != "spark_improvements,spark_evaluations" {
				t.Fatalf("calls on resume: %v", names)
			}
			if rep.Usage.CachedCalls != 0 {
				t.Fatalf("a call was answered from the cache: %+v", rep.Usage)
			}
		})
	}
}
