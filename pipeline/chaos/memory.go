package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/similarity"
)

// duplicateThreshold is the similarity at which an accepted idea counts as a
// repeat of a remembered one.
const duplicateThreshold = 0.8

// memory is the run's view of its idea memory: what was remembered before
// and what this run adds, written through to the store at once.
type memory struct {
	store madspark.IdeaStore
	name  string
	runID string
	ideas []madspark.RememberedIdea
	vecs  []similarity.Vector
}

// load reads the memory as it was before this run. Ideas the run itself
// remembered (a resumed run did, before it was interrupted) are left out:
// the replayed iterations remember them again, in the same order, so every
// prompt and every judgement is the same as the first time and the journal
// replays it.
func (m *memory) load(ctx context.Context) error {
	ideas, err := m.store.RememberedIdeas(ctx, m.name)
	if err != nil {
		return fmt.Errorf("load idea memory: %w", err)
	}
	m.ideas = ideas[:0:0]
	for _, it := range ideas {
		if it.RunID == m.runID {
			continue
		}
		m.ideas = append(m.ideas, it)
		var a AcceptedIdea
		_ = json.Unmarshal(it.Data, &a)
		a.IdeaName = it.Name
		m.vecs = append(m.vecs, ideaVector(a))
	}
	return nil
}

func ideaVector(a AcceptedIdea) similarity.Vector {
	return similarity.Of(a.IdeaName + ". " + strings.Join(a.KeyPoints, ". "))
}

// names returns the names of the most recent n remembered ideas.
func (m *memory) names(n int) []string {
	var out []string
	for _, it := range m.ideas[max(0, len(m.ideas)-n):] {
		out = append(out, it.Name)
	}
	return out
}

// rejectDuplicates moves accepted ideas that repeat a remembered idea (or
// one accepted earlier in the same judgement) to the rejected list, saying
// which idea they repeat, and returns how many it moved.
func (m *memory) rejectDuplicates(j *Judgement) int {
	names := make([]string, len(m.ideas))
	for i, it := range m.ideas {
		names[i] = it.Name
	}
	vecs := append([]similarity.Vector(nil), m.vecs...)
	kept := j.AcceptedIdeas[:0]
	moved := 0
	for _, a := range j.AcceptedIdeas {
		v := ideaVector(a)
		i, s := similarity.Nearest(v, vecs)
		if i < 0 || s < duplicateThreshold {
			for k, n := range names {
				if strings.EqualFold(n, a.IdeaName) {
					i, s = k, 1
				}
			}
		}
		if i >= 0 && s >= duplicateThreshold {
			j.RejectedIdeas = append(j.RejectedIdeas, RejectedIdea{
				IdeaName:        a.IdeaName,
				RejectionReason: fmt.Sprintf("near-duplicate of remembered idea %q (similarity %.2f)", names[i], s),
				QualityScore:    a.QualityScore,
				FatalFlaw:       "repeats an idea already accepted",
			})
			moved++
			continue
		}
		kept = append(kept, a)
		vecs = append(vecs, v)
		names = append(names, a.IdeaName)
	}
	j.AcceptedIdeas = kept
	return moved
}

// remember stores accepted ideas, discovered in iteration n, at once.
func (m *memory) remember(ctx context.Context, accepted []AcceptedIdea, n int) error {
	if len(accepted) == 0 {
		return nil
	}
	now := time.Now().UTC()
	var batch []madspark.RememberedIdea
	for _, a := range accepted {
		data, err := json.Marshal(a)
		if err != nil {
			return err
		}
		batch = append(batch, madspark.RememberedIdea{Memory: m.name, Name: a.IdeaName, Data: data, RunID: m.runID, Iteration: n, AcceptedAt: now})
	}
	if err := m.store.RememberIdeas(ctx, batch); err != nil {
		return fmt.Errorf("remember ideas: %w", err)
	}
	for i, a := range accepted {
		m.ideas = append(m.ideas, batch[i])
		m.vecs = append(m.vecs, ideaVector(a))
	}
	return nil
}

// ExportMemory renders a memory as the seed's ideas.json: every accepted
// idea with the iteration that discovered it and when, plus cumulative
// statistics.
func ExportMemory(name string, ideas []madspark.RememberedIdea) ([]byte, error) {
	type entry struct {
		AcceptedIdea
		DiscoveredIteration int       `json:"discovered_iteration"`
		AcceptedAt          time.Time `json:"accepted_at"`
		RunID               string    `json:"run_id"`
	}
	out := struct {
		Memory     string         `json:"memory"`
		Ideas      []entry        `json:"ideas"`
		Statistics map[string]any `json:"statistics"`
	}{Memory: name, Ideas: []entry{}}
	byIteration := map[string]int{}
	runs := map[string]bool{}
	var quality float64
	var last time.Time
	for _, it := range ideas {
		var a AcceptedIdea
		if err := json.Unmarshal(it.Data, &a); err != nil {
			return nil, fmt.Errorf("idea %q: %w", it.Name, err)
		}
		out.Ideas = append(out.Ideas, entry{a, it.Iteration, it.AcceptedAt, it.RunID})
		byIteration[fmt.Sprint(it.Iteration)]++
		runs[it.RunID] = true
		quality += a.QualityScore
		if it.AcceptedAt.After(last) {
			last = it.AcceptedAt
		}
	}
	avg := 0.0
	if len(ideas) > 0 {
		avg = float64(int(quality/float64(len(ideas))*100+0.5)) / 100
	}
	out.Statistics = map[string]any{
		"total_accepted":        len(ideas),
		"accepted_by_iteration": byIteration,
		"runs":                  len(runs),
		"average_quality_score": avg,
		"last_updated":          last,
	}
	return json.MarshalIndent(out, "", "  ")
}

// seedConcepts are the random concepts the chaos generator starts from.
var seedConcepts = []string{
	"tides", "origami", "beekeeping", "jazz improvisation", "glaciers", "lichen", "chess openings", "lighthouses",
	"fermentation", "migration of birds", "cartography", "circus acrobatics", "typography", "volcanoes", "mycelium networks",
	"auction houses", "clockwork", "coral reefs", "sign language", "theatre lighting", "desert caravans", "kintsugi",
	"orbital mechanics", "folk dances", "sourdough", "tarot", "weather balloons", "beavers", "board games", "cathedrals",
	"subway maps", "perfume making", "whale songs", "quilting", "magnetism", "night markets", "bonsai", "relay races",
	"libraries", "camouflage", "sundials", "street murals", "seed banks", "echolocation", "puppetry", "salt flats",
	"ant colonies", "radio drama", "glassblowing", "pilgrimages", "compost", "kites", "tea ceremonies", "shipwrecks",
	"crossword puzzles", "fireflies", "stained glass", "archery", "monsoons", "lullabies", "blacksmithing", "avalanches",
	"carnivals", "telescopes", "hermit crabs", "calligraphy", "postcards", "dominoes", "rainforest canopies", "harbours",
	"mosaics", "sled dogs", "bioluminescence", "barter", "mazes", "paper mills", "honeycomb", "hot springs", "wind chimes",
	"flea markets", "geodes", "scarecrows", "pinball", "lanterns", "beachcombing", "choirs", "rope bridges", "sand dunes",
}

// sampleSeeds draws k distinct seed concepts for iteration n,
// reproducibly from seed.
func sampleSeeds(seed uint64, n, k int) []string {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	idx := rng.Perm(len(seedConcepts))[:min(k, len(seedConcepts))]
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = seedConcepts[j]
	}
	return out
}
