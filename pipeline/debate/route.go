package debate

import (
	"fmt"
	"regexp"
	"strings"
)

// Level is a query's complexity.
type Level string

// The complexity levels: simple queries get one direct answer, complex ones
// the full debate.
const (
	Simple  Level = "simple"
	Complex Level = "complex"
)

// Features are what the router looks at (seed §4.4).
type Features struct {
	TokenCount             int      `json:"token_count"`
	HasCodeBlock           bool     `json:"has_code_block"`
	HasReasoningKeywords   bool     `json:"has_reasoning_keywords"`
	HasMultiStepIndicators bool     `json:"has_multi_step_indicators"`
	Keywords               []string `json:"keywords,omitempty"`
}

// Route is the router's decision.
type Route struct {
	Level      Level    `json:"level"`
	Confidence float64  `json:"confidence"`
	Features   Features `json:"features"`
}

// Explain says how and why the query is routed, one feature a line.
func (r Route) Explain() string {
	f := r.Features
	return fmt.Sprintf("level:       %s\nconfidence:  %.2f\ntokens:      %d (threshold %d)\ncode block:  %v\nreasoning:   %v %s\nmulti-step:  %v\n",
		r.Level, r.Confidence, f.TokenCount, TokenThreshold, f.HasCodeBlock, f.HasReasoningKeywords, strings.Join(f.Keywords, ", "), f.HasMultiStepIndicators)
}

// TokenThreshold is the token count above which a query is complex on
// length alone.
const TokenThreshold = 50

// reasoningKeywords are the seed's complex keywords.
var reasoningKeywords = []string{
	"explain", "analyze", "analyse", "compare", "implement", "debug", "refactor", "design",
	"architecture", "step by step", "step-by-step", "walk through", "trade-offs", "tradeoffs", "trade offs",
}

var (
	codeBlock = regexp.MustCompile("(?m)```|^(    |\t)\\S")
	// multiStep matches sequencing words and numbered or bulleted lists.
	multiStep = regexp.MustCompile(`(?i)\b(first(ly)?|second(ly)?|then|after that|next|finally|and also)\b.*\b(then|next|finally|after|also)\b|(?m)^\s*(\d+[.)]|[-*])\s+\S.*\n\s*(\d+[.)]|[-*])\s+\S`)
	wordRe    = regexp.MustCompile(`[a-z][a-z-]*`)
)

// Classify routes query with heuristics only, no model call. count counts
// tokens with the real tokenizer.
func Classify(query string, count func(string) int) Route {
	f := Features{TokenCount: count(query), HasCodeBlock: codeBlock.MatchString(query)}
	lower := strings.ToLower(query)
	words := map[string]bool{}
	for _, w := range wordRe.FindAllString(lower, -1) {
		words[w] = true
	}
	for _, k := range reasoningKeywords {
		if strings.Contains(k, " ") || strings.Contains(k, "-") {
			if strings.Contains(lower, k) {
				f.Keywords = append(f.Keywords, k)
			}
		} else if words[k] || words[k+"s"] || words[k+"ing"] || words[strings.TrimSuffix(k, "e")+"ing"] {
			f.Keywords = append(f.Keywords, k)
		}
	}
	f.HasReasoningKeywords = len(f.Keywords) > 0
	f.HasMultiStepIndicators = strings.Count(query, "?") > 1 || mayBeMultiStep(query, lower) && multiStep.MatchString(query)

	// Each feature adds evidence of complexity; one is enough to route to
	// the debate, and more make the router surer.
	score := 0.0
	if f.TokenCount > TokenThreshold {
		score += 0.4 + min(0.2, float64(f.TokenCount-TokenThreshold)/500)
	}
	if f.HasCodeBlock {
		score += 0.35
	}
	if f.HasReasoningKeywords {
		score += 0.3 + 0.05*float64(min(len(f.Keywords)-1, 3))
	}
	if f.HasMultiStepIndicators {
		score += 0.3
	}
	if score > 0 {
		return Route{Level: Complex, Confidence: round2(min(0.55+score/2, 0.99)), Features: f}
	}
	// Short plain questions are surely simple; longer ones less so.
	return Route{Level: Simple, Confidence: round2(max(0.95-float64(f.TokenCount)/float64(TokenThreshold)*0.4, 0.55)), Features: f}
}

// mayBeMultiStep reports whether multiStep can match query (lower is
// query in lower case): its first form needs one of the words that end a
// sequence, its second a line break. Most queries have neither, and the
// regular expression costs more than the rest of Classify.
func mayBeMultiStep(query, lower string) bool {
	if strings.Contains(query, "\n") {
		return true
	}
	for _, w := range []string{"then", "next", "finally", "after", "also"} {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
