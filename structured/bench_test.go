package structured

import (
	"fmt"
	"strings"
	"testing"
)

type benchJudgement struct {
	Accepted []struct {
		IdeaName  string   `json:"idea_name" jsonschema:"minLength=1"`
		Score     float64  `json:"quality_score" jsonschema:"minimum=0,maximum=10"`
		KeyPoints []string `json:"key_points,omitempty"`
	} `json:"accepted_ideas"`
	Synthesis string `json:"synthesis"`
	Verdict   string `json:"verdict" jsonschema:"enum=approve,enum=revise,enum=reject"`
}

// BenchmarkRead measures reading a judge's reply of 8 ideas: well-formed
// JSON, and the same content in a small model's shapes (a fence, prose, a
// wrapper, trailing commas, keys in another style, scores as text, key
// points as bullet lines, a decorated verdict).
//
//	go test -run '^$' -bench BenchmarkRead ./structured
func BenchmarkRead(b *testing.B) {
	s, err := NewSpec[benchJudgement]("judge")
	if err != nil {
		b.Fatal(err)
	}
	var clean, shaped []string
	for i := 0; i < 8; i++ {
		clean = append(clean, fmt.Sprintf(`{"idea_name": "idea %d", "quality_score": 7.5, "key_points": ["cheap to start", "uses rooftops", "shared tools"]}`, i))
		shaped = append(shaped, fmt.Sprintf(`{"Idea Name": "idea %d", "qualityScore": "7.5 out of 10", "key_points": "- cheap to start\n- uses rooftops\n- shared tools",}`, i))
	}
	for _, tc := range []struct{ name, reply string }{
		{"clean", `{"accepted_ideas": [` + strings.Join(clean, ", ") + `], "synthesis": "Rooftops first.", "verdict": "approve"}`},
		{"shaped", "Here it is:\n```json\n{\"result\": {\"Accepted_Ideas\": [" + strings.Join(shaped, ", ") + "], \"Synthesis\": \"Rooftops first.\", \"verdict\": \"**Approve**\",}}\n```\nThanks."},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Decode(tc.reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
