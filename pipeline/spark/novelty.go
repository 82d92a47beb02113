package spark

import "github.com/madspark/madspark/similarity"

// dropNearDuplicates keeps ideas in order, dropping any whose similarity to
// an idea already kept is at least threshold (see package similarity).
func dropNearDuplicates(ideas []Idea, threshold float64) []Idea {
	var kept []Idea
	var vecs []similarity.Vector
	for _, idea := range ideas {
		v := similarity.Of(idea.Title + " " + idea.Description)
		if _, s := similarity.Nearest(v, vecs); s >= threshold {
			continue
		}
		kept = append(kept, idea)
		vecs = append(vecs, v)
	}
	return kept
}
