// Package similarity measures how alike two short texts are, to catch the
// reworded repeats that language models produce. It is cheap, deterministic
// and offline: the cosine of word and word-bigram count vectors, lower-cased,
// with common stop words removed.
package similarity

import (
	"math"
	"strings"
	"unicode"
)

// Vector is a text's weighted terms.
type Vector map[string]float64

var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true, "in": true,
	"for": true, "on": true, "with": true, "by": true, "at": true, "is": true, "are": true, "that": true,
	"this": true, "it": true, "as": true, "from": true, "be": true, "its": true, "their": true,
}

// Of returns the term vector of s: each word once, each adjacent pair of
// words half.
func Of(s string) Vector {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	v := Vector{}
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

// Cosine returns the cosine similarity of a and b, 0 (nothing shared) to 1
// (same terms in the same proportions). An empty vector is similar to
// nothing.
func Cosine(a, b Vector) float64 {
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

// Nearest returns the index of the vector in vs most similar to v and the
// similarity, or -1 and 0 when vs is empty.
func Nearest(v Vector, vs []Vector) (int, float64) {
	best, sim := -1, 0.0
	for i, w := range vs {
		if s := Cosine(v, w); s > sim || best < 0 {
			best, sim = i, s
		}
	}
	return best, sim
}
