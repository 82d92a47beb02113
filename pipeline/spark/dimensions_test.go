package spark

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// The multi-dimensional evaluation uses the seven dimensions of the design,
// in its order, with weights summing to 1.
func TestDimensionsAreTheSevenOfTheDesign(t *testing.T) {
	want := []string{"innovation", "feasibility", "impact", "scalability", "sustainability", "cost_effectiveness", "risk_assessment"}
	typ := reflect.TypeOf(Dimensions{})
	var got []string
	for i := range typ.NumField() {
		got = append(got, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("dimensions %v, want %v", got, want)
	}
	var names []string
	for _, d := range dimensionNames {
		names = append(names, d.key)
	}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("rendered dimensions %v, want %v", names, want)
	}
	var sum float64
	for _, w := range dimensionWeights.values() {
		if w <= 0 {
			t.Fatalf("weight %v not positive", w)
		}
		sum += w
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Fatalf("weights sum to %v", sum)
	}
	d := Dimensions{Innovation: 1, Feasibility: 2, Impact: 3, Scalability: 4, Sustainability: 5, CostEffectiveness: 6, RiskAssessment: 7}
	for i, k := range want {
		if got := d.byKey(k); got != float64(i+1) {
			t.Errorf("byKey(%q) = %v, want %d", k, got, i+1)
		}
	}
	m := newMultiDimensional(multiDimItem{Scores: d})
	if m.Mean != 4 || m.WeightedScore != round2(0.15+0.4+0.6+0.4+0.5+0.9+0.7) {
		t.Errorf("mean %v weighted %v", m.Mean, m.WeightedScore)
	}
	b, _ := json.Marshal(d)
	if !strings.Contains(string(b), `"sustainability":5`) || strings.Contains(string(b), "timeline") {
		t.Errorf("json %s", b)
	}
	if s := dimensionsText(m); !strings.Contains(s, "sustainability 5.0") {
		t.Errorf("text %q", s)
	}
	if s := dimensionsTable(m); !strings.Contains(s, "| sustainability |") {
		t.Errorf("table %q", s)
	}
}
