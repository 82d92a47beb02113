package structured

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchKB is the sizes, in KB, that BenchmarkReadAdversarial reads each
// input at.
var benchKB = flag.String("read.kb", "8,64", "sizes in KB of BenchmarkReadAdversarial's inputs, comma-separated")

// adversarial are replies built to make a reader slow, each of about n
// bytes: what a broken or hostile server may send.
var adversarial = []struct {
	name string
	make func(n int) string
}{
	{"clean-json", func(n int) string { return manyIdeas(n) }},
	{"unclosed-brackets", func(n int) string { return `{"title":` + strings.Repeat("[", n-9) }},
	{"unclosed-braces", func(n int) string { return strings.Repeat("{", n) }},
	{"prose-brackets", func(n int) string { return strings.Repeat("[see ", n/5) }},
	{"empty-fences", func(n int) string { return strings.Repeat("```\n", n/4) }},
	{"json-fences", func(n int) string { return strings.Repeat("```json\n{\"score\": 7}\n```\n", n/25) }},
	{"deep-objects", func(n int) string { k := n / 6; return strings.Repeat(`{"a": `, k) + "1" + strings.Repeat("}", k) }},
	{"deep-lists", func(n int) string { return strings.Repeat("[", n/2) + strings.Repeat("]", n/2) }},
	{"long-string", func(n int) string {
		return `{"score": 7, "decision": "approve", "notes": ["` + strings.Repeat("x", n) + `"]}`
	}},
	{"unterminated-string", func(n int) string { return `{"notes": ["` + strings.Repeat("x y ", n/4) }},
	{"unescaped-quotes", func(n int) string { return `{"notes": [` + strings.Repeat(`"say "hi" now", `, n/16) + `"end"]}` }},
	{"many-candidates", func(n int) string {
		return strings.Repeat(`{"score": 7, "decision": "approve", "notes": []} `, n/50)
	}},
	{"missing-commas", func(n int) string { return "{\"notes\": [\n" + strings.Repeat("\"a\"\n", n/4) + "]}" }},
	{"think-tags", func(n int) string { return strings.Repeat("<think>", n/7) }},
	{"quotes-in-prose", func(n int) string { return strings.Repeat(`He said "no" [`, n/14) }},
	{"label-lines", func(n int) string {
		return "Notes:\n" + strings.Repeat("- a note on solar farms\n", n/24) + "Score: 7\nDecision: approve\n"
	}},
	{"label-quoted-lines", func(n int) string {
		return "Comment: \"" + strings.Repeat("  a quoted line\n", n/16) + "\"\nScore: 7\nDecision: approve\n"
	}},
	{"yaml-folded-text", func(n int) string {
		return "comment: " + strings.Repeat("a line that YAML folds\n  ", n/25) + "end\nscore: 7\ndecision: approve\n"
	}},
	{"yaml-flow-deep", func(n int) string { return "notes: " + strings.Repeat("[", n/2) + strings.Repeat("]", n/2) }},
	{"table-rows", func(n int) string { return "| a | b |\n|---|---|\n" + strings.Repeat("| x | y |\n", n/10) }},
	{"bullets-deep", func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			b.WriteString(strings.Repeat(" ", i%64) + "- x:\n")
		}
		return b.String()
	}},
}

// manyIdeas is a well-formed reply of about n bytes.
func manyIdeas(n int) string {
	var b strings.Builder
	b.WriteString(`{"score": 7, "decision": "approve", "notes": [`)
	for i := 0; b.Len() < n-40; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"note %d on solar farms"`, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// BenchmarkReadAdversarial reads each adversarial reply at each size of
// -read.kb and reports the microseconds per KB at each ("us/KB@8KB"),
// the ratio of the largest size's to the smallest's (1 for a reader
// that is linear, 8 for one that is quadratic between 8 and 64 KB), and
// the largest size's as a multiple of a well-formed reply's of the same
// size, read in the same run ("x-clean").
//
//	go test -run '^$' -bench BenchmarkReadAdversarial -benchtime 3x ./structured
//	go test -run '^$' -bench BenchmarkReadAdversarial -benchtime 1x ./structured -read.kb 64,1024
func BenchmarkReadAdversarial(b *testing.B) {
	var sizes []int
	for _, f := range strings.Split(*benchKB, ",") {
		kb, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || kb <= 0 {
			b.Fatalf("-read.kb %q: want sizes in KB", *benchKB)
		}
		sizes = append(sizes, kb)
	}
	s, err := NewSpec[verdict]("verdict")
	if err != nil {
		b.Fatal(err)
	}
	// usPerKB reads text n times and returns the microseconds per KB.
	usPerKB := func(text string, n int) float64 {
		start := time.Now()
		for i := 0; i < n; i++ {
			s.Parse(context.Background(), text)
		}
		return float64(time.Since(start).Microseconds()) / float64(n) / (float64(len(text)) / 1024)
	}
	clean := map[int]float64{}
	for _, kb := range sizes {
		text := manyIdeas(kb << 10)
		usPerKB(text, 1) // warm up
		clean[kb] = usPerKB(text, 5)
	}
	for _, tc := range adversarial {
		b.Run(tc.name, func(b *testing.B) {
			texts := make([]string, len(sizes))
			for i, kb := range sizes {
				texts[i] = tc.make(kb << 10)
			}
			for _, t := range texts {
				usPerKB(t, 1) // warm up
			}
			per := make([]float64, len(sizes))
			for b.Loop() {
				for i, t := range texts {
					per[i] += usPerKB(t, 1)
				}
			}
			for i, kb := range sizes {
				per[i] /= float64(b.N)
				b.ReportMetric(per[i], fmt.Sprintf("us/KB@%dKB", kb))
			}
			last := len(sizes) - 1
			b.ReportMetric(per[last]/per[0], "ratio")
			b.ReportMetric(per[last]/clean[sizes[last]], "x-clean")
		})
	}
}
