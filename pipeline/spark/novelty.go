package spark

import "github.com/madspark/madspark/similarity"

// dropNearDuplicates keeps ideas in order, dropping any whose similarity to
// an idea already kept is at least threshold (see package similarity).
// dupOf has one entry per idea of ideas: -1 for a kept idea, else the index
// in ideas of the kept idea it is nearest to.
func dropNearDuplicates(ideas []Idea, threshold float64) (kept []Idea, dupOf []int) {
	var vecs []similarity.Vector
	var keptAt []int
	dupOf = make([]int, len(ideas))
	for i, idea := range ideas {
		v := similarity.Of(idea.Title + " " + idea.Description)
		if j, s := similarity.Nearest(v, vecs); j >= 0 && s >= threshold {
			dupOf[i] = keptAt[j]
			continue
		}
		dupOf[i] = -1
		kept = append(kept, idea)
		keptAt = append(keptAt, i)
		vecs = append(vecs, v)
	}
	return kept, dupOf
}
