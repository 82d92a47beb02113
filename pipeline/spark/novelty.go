package spark

import (
	"math"
	"strings"
	"unicode"
)

// dropNearDuplicates keeps ideas in order, dropping any whose similarity to
// an idea already kept is at least threshold. Similarity is the cosine of
// word-bigram and word count vectors of title and description, lower-cased,
// with stop words removed: cheap, deterministic, and good at catching the
// reworded repeats that models produce.
func dropNearDuplicates(ideas []Idea, threshold float64) []Idea {
	var kept []Idea
	var vecs []map[string]float64
	for _, idea := range ideas {
		v := termVector(idea.Title + " " + idea.Description)
		dup := false
		for _, k := range vecs {
			if cosine(v, k) >= threshold {
				dup = true
				break
			}
		}
		if !dup {
			kept = append(kept, idea)
			vecs = append(vecs, v)
		}
	}
	return kept
}

var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"for": true, "on": true, "with": true, "by": true, "at": true, "is": true, "are": true, "that": true,
	"this": true, "it": true, "as": true, "from": true, "be": true, "its": true, "their": true,
}

func termVector(s string) map[string]float64 {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	v := map[string]float64{}
	prev := ""
	for _, w := range words {
		if stopWords[w] {
			continue
		}
		v[w]++
		if prev != "" {
			v[prev+" "+w] += 0.5
		}
		prev = w
	}
	return v
}

func cosine(a, b map[string]float64) float64 {
	var dot, na, nb float64
	for k, x := range a {
		dot += x * b[k]
		na += x * x
	}
	for _, y := range b {
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}
