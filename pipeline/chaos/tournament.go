package chaos

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/madspark/madspark/agent"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

// Elo parameters: every idea starts at 1000; K is the most a rating moves
// in one comparison.
const (
	eloStart = 1000.0
	eloK     = 32.0
)

// tournament ranks ideas by a Swiss-system tournament of pairwise LLM
// comparisons: ⌈log₂ n⌉ rounds, each pairing ideas of similar rating that
// have not met, and each judged in one batched call. That is about
// (n/2)·⌈log₂ n⌉ comparisons for ⌈log₂ n⌉ calls. It returns nil for fewer
// than two ideas.
func (p *Pipeline) tournament(ctx context.Context, r *engine.Run, in Params, ideas []AcceptedIdea) (*Tournament, error) {
	n := len(ideas)
	if n < 2 {
		return nil, nil
	}
	// Seed the first round by the judge's quality scores.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ideas[order[a]].QualityScore > ideas[order[b]].QualityScore })
	ratings := make([]Rating, n)
	for i, a := range ideas {
		ratings[i] = Rating{IdeaName: a.IdeaName, Elo: eloStart}
	}
	played := map[[2]int]bool{}
	t := &Tournament{Rounds: int(math.Ceil(math.Log2(float64(n))))}
	for round := 1; round <= t.Rounds; round++ {
		if round > 1 {
			sort.SliceStable(order, func(a, b int) bool { return ratings[order[a]].Elo > ratings[order[b]].Elo })
		}
		pairs := swissPairs(order, played)
		ci := compareInput{Prompt: in.Prompt}
		for _, pr := range pairs {
			ci.Pairs = append(ci.Pairs, pair{A: describe(ideas[pr[0]]), B: describe(ideas[pr[1]])})
		}
		results, err := engine.Step(ctx, r, fmt.Sprintf("tournament/round_%d", round), ci, func(ctx context.Context, c llm.Client) ([]comparison, error) {
			out, err := agent.JSON(ctx, c, p.compare, p.verdicts, ci, agent.Options{Temperature: tempCompare, Timeout: stageTimeout},
				structured.HardCheck(func(v *comparisons) (err error) {
					v.Results, err = oneResultPerPair(v.Results, len(pairs))
					return err
				}))
			return out.Results, err
		})
		if err != nil {
			return nil, err
		}
		for k, res := range results {
			a, b := pairs[k][0], pairs[k][1]
			if res.Winner == "b" {
				a, b = b, a
			}
			updateElo(&ratings[a], &ratings[b])
		}
		t.Comparisons += len(pairs)
	}
	sort.SliceStable(ratings, func(i, j int) bool { return ratings[i].Elo > ratings[j].Elo })
	for i := range ratings {
		ratings[i].Elo = math.Round(ratings[i].Elo*10) / 10
	}
	t.Ratings = ratings
	return t, nil
}

// swissPairs pairs the ideas in order (best first), each with the next one
// it has not met yet; an odd one out sits the round out.
func swissPairs(order []int, played map[[2]int]bool) [][2]int {
	var pairs [][2]int
	used := map[int]bool{}
	for i, a := range order {
		if used[a] {
			continue
		}
		partner := -1
		for _, b := range order[i+1:] {
			if used[b] {
				continue
			}
			if partner < 0 {
				partner = b // fallback: a rematch beats a bye
			}
			if !played[key(a, b)] {
				partner = b
				break
			}
		}
		if partner < 0 {
			break
		}
		used[a], used[partner] = true, true
		played[key(a, partner)] = true
		pairs = append(pairs, [2]int{a, partner})
	}
	return pairs
}

func key(a, b int) [2]int {
	if a > b {
		a, b = b, a
	}
	return [2]int{a, b}
}

// updateElo moves the winner's and loser's ratings after one game.
func updateElo(winner, loser *Rating) {
	expected := 1 / (1 + math.Pow(10, (loser.Elo-winner.Elo)/400))
	delta := eloK * (1 - expected)
	winner.Elo += delta
	loser.Elo -= delta
	winner.Wins++
	loser.Losses++
}

// oneResultPerPair checks that results answer each of n pairs exactly once
// and returns them in pair order.
func oneResultPerPair(results []comparison, n int) ([]comparison, error) {
	out := make([]comparison, n)
	seen := make([]bool, n)
	var problems []string
	for _, c := range results {
		switch {
		case c.Pair < 0 || c.Pair >= n:
			problems = append(problems, fmt.Sprintf("pair %d does not exist", c.Pair))
		case seen[c.Pair]:
			problems = append(problems, fmt.Sprintf("pair %d is answered twice", c.Pair))
		default:
			seen[c.Pair], out[c.Pair] = true, c
		}
	}
	for i, ok := range seen {
		if !ok {
			problems = append(problems, fmt.Sprintf("pair %d is missing", i))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}
