package similarity

import (
	"math"
	"testing"
)

func TestCosine(t *testing.T) {
	a := Of("Rooftop gardens: grow vegetables on the roofs of city apartment buildings.")
	b := Of("Rooftop Gardens! Grow vegetables on the roofs of apartment buildings in the city.")
	c := Of("Vertical farms stack hydroponic trays inside disused warehouses.")
	if s := Cosine(a, b); s < 0.8 || s >= 1 {
		t.Fatalf("reworded repeat similarity = %v, want in [0.8, 1)", s)
	}
	if s := Cosine(a, c); s > 0.2 {
		t.Fatalf("different ideas similarity = %v", s)
	}
	if s := Cosine(a, a); math.Abs(s-1) > 1e-12 {
		t.Fatalf("self similarity = %v", s)
	}
	if Cosine(Of("the of and"), a) != 0 {
		t.Fatal("a text of stop words only is similar to nothing")
	}
	if i, s := Nearest(c, []Vector{a, Of("hydroponic trays in warehouses, stacked vertically")}); i != 1 || s < 0.3 {
		t.Fatalf("Nearest = %d, %v", i, s)
	}
	if i, _ := Nearest(a, nil); i != -1 {
		t.Fatal("Nearest of nothing")
	}
}
