package chaos

import (
	"context"
	"fmt"
	"math"
	"sort"

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
				func(v *comparisons, pr *structured.Problems) { pairRule(len(pairs), v, pr) })
			return out.Results, err
		})
		if err != nil {
			return nil, err
		}
		for _, res := range results {
			a, b := pairs[res.Pair][0], pairs[res.Pair][1]
			if res.Winner == "b" {
				a, b = b, a
			}
			updateElo(&ratings[a], &ratings[b])
		}
		t.Comparisons += len(results)
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

// pairRule repairs the verdicts of a round of n pairs, numbered 0..n-1 in
// the prompt, and leaves them in pair order:
//
//   - index: pairs numbered 1..n (all of them, none 0) are renumbered from
//     0; a pair that does not exist is dropped; a pair answered twice
//     keeps its first verdict.
//   - count: a pair with no verdict is asked for once; still missing, it
//     is left undecided and no rating moves for it.
func pairRule(n int, v *comparisons, p *structured.Problems) {
	oneBased := len(v.Results) > 0
	for _, c := range v.Results {
		if c.Pair < 1 || c.Pair > n {
			oneBased = false
		}
	}
	if oneBased {
		hasN := false
		for _, c := range v.Results {
			hasN = hasN || c.Pair == n
		}
		// Numbers 1..n-1 alone fit both counts; only n tells them apart.
		oneBased = hasN
	}
	if oneBased {
		for i := range v.Results {
			v.Results[i].Pair--
		}
		p.Fix("index", "pairs are numbered from 0", func() string {
			return fmt.Sprintf("pairs numbered 1..%d renumbered 0..%d", n, n-1)
		})
	}
	byPair := make([]*comparison, n)
	var unknown, twice []int
	for i := range v.Results {
		c := &v.Results[i]
		switch {
		case c.Pair < 0 || c.Pair >= n:
			unknown = append(unknown, c.Pair)
		case byPair[c.Pair] != nil:
			twice = append(twice, c.Pair)
		default:
			byPair[c.Pair] = c
		}
	}
	if len(unknown) > 0 {
		p.Fix("index", fmt.Sprintf("pairs %v do not exist (0..%d)", unknown, n-1), func() string {
			return fmt.Sprintf("verdicts on pairs %v dropped: no such pair in 0..%d", unknown, n-1)
		})
	}
	if len(twice) > 0 {
		p.Fix("index", fmt.Sprintf("pairs %v are answered twice", twice), func() string {
			return fmt.Sprintf("second verdicts on pairs %v dropped, the first kept", twice)
		})
	}
	out := []comparison{}
	var missing []int
	for i, c := range byPair {
		if c == nil {
			missing = append(missing, i)
			continue
		}
		out = append(out, *c)
	}
	if len(missing) > 0 {
		p.Ask("count", fmt.Sprintf("pairs %v have no verdict: answer every pair 0..%d", missing, n-1), func() string {
			return fmt.Sprintf("pairs %v left undecided: no verdict", missing)
		})
	}
	v.Results = out
}
