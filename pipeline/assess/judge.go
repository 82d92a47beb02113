package assess

import (
	"fmt"
	"math"
	"time"
)

// Grade is a letter grade with the judge's reason for it.
type Grade struct {
	Grade     string `json:"grade" jsonschema:"enum=A,enum=B,enum=C,enum=D,enum=F"`
	Rationale string `json:"rationale" jsonschema:"minLength=1"`
}

// Grades are the judge's seven criteria. Each reads "higher is better": an
// A for capital requirements means little capital is needed, an A for
// regulatory risks or execution difficulty means they are low.
type Grades struct {
	MarketPotential      Grade `json:"market_potential"`
	CompetitiveLandscape Grade `json:"competitive_landscape"`
	TechnicalFeasibility Grade `json:"technical_feasibility"`
	CapitalRequirements  Grade `json:"capital_requirements"`
	RegulatoryRisks      Grade `json:"regulatory_risks"`
	ExecutionDifficulty  Grade `json:"execution_difficulty"`
	EvidenceQuality      Grade `json:"evidence_quality"`
}

// Criterion is one of the judge's criteria and its weight in the score.
type Criterion struct {
	Key    string  `json:"key"`
	Title  string  `json:"title"`
	Weight float64 `json:"weight"`
}

// Criteria are the judge's criteria in order, with their weights (which sum
// to 1): the market and the evidence for it count most, the two risks that
// rarely decide alone (capital, regulation) least.
var Criteria = []Criterion{
	{"market_potential", "Market potential", 0.20},
	{"competitive_landscape", "Competitive landscape", 0.15},
	{"technical_feasibility", "Technical feasibility", 0.15},
	{"capital_requirements", "Capital requirements", 0.10},
	{"regulatory_risks", "Regulatory risks", 0.10},
	{"execution_difficulty", "Execution difficulty", 0.15},
	{"evidence_quality", "Evidence quality", 0.15},
}

// ByKey returns the grade for a criterion key, and whether the key is one
// of Criteria.
func (g *Grades) ByKey(key string) (Grade, bool) {
	switch key {
	case "market_potential":
		return g.MarketPotential, true
	case "competitive_landscape":
		return g.CompetitiveLandscape, true
	case "technical_feasibility":
		return g.TechnicalFeasibility, true
	case "capital_requirements":
		return g.CapitalRequirements, true
	case "regulatory_risks":
		return g.RegulatoryRisks, true
	case "execution_difficulty":
		return g.ExecutionDifficulty, true
	case "evidence_quality":
		return g.EvidenceQuality, true
	}
	return Grade{}, false
}

// Recommendations of the judge.
const (
	Pursue  = "pursue"
	Refine  = "refine"
	Abandon = "abandon"
)

// judgeSynonyms map the words models use onto the judge's grades and
// recommendations: a grade with a plus or minus is its letter.
var judgeSynonyms = map[string]string{
	"A+": "A", "A-": "A", "B+": "B", "B-": "B", "C+": "C", "C-": "C", "D+": "D", "D-": "D", "E": "F",
	"proceed": Pursue, "go": Pursue, "invest": Pursue, "revise": Refine, "improve": Refine, "iterate": Refine,
	"reject": Abandon, "drop": Abandon, "stop": Abandon, "pass": Abandon,
}

// Judgement is the judge's reply.
type Judgement struct {
	Grades  Grades `json:"grades"`
	Summary string `json:"summary" jsonschema:"minLength=1"`
	// Recommendation is pursue, refine (promising once its weaknesses are
	// addressed) or abandon.
	Recommendation string `json:"recommendation" jsonschema:"enum=pursue,enum=refine,enum=abandon"`
}

// Evaluation is a judged analysis, as written to evaluation.json: the
// judge's grades and the score computed from them.
type Evaluation struct {
	Idea string `json:"idea"`
	Slug string `json:"slug"`
	Judgement
	// WeightedScore is Σ weight × grade points (A 4 … F 0), scaled to
	// 0-10; OverallGrade is its letter.
	WeightedScore float64     `json:"weighted_score"`
	OverallGrade  string      `json:"overall_grade"`
	Weights       []Criterion `json:"weights"`
	// Iterations and Approved describe the analysis that was judged.
	Iterations int       `json:"iterations"`
	Approved   bool      `json:"approved"`
	Analysis   string    `json:"analysis_file"`
	RunID      string    `json:"run_id"`
	Mode       string    `json:"mode"`
	JudgedAt   time.Time `json:"judged_at"`
}

// Points returns a grade's points: A 4, B 3, C 2, D 1, F 0.
func Points(grade string) (float64, error) {
	switch grade {
	case "A":
		return 4, nil
	case "B":
		return 3, nil
	case "C":
		return 2, nil
	case "D":
		return 1, nil
	case "F":
		return 0, nil
	}
	return 0, fmt.Errorf("unknown grade %q", grade)
}

// Score returns the weighted score (0-10, one decimal) and the overall
// letter grade of g.
func Score(g Grades) (float64, string, error) {
	var gpa float64
	for _, c := range Criteria {
		grade, _ := g.ByKey(c.Key)
		p, err := Points(grade.Grade)
		if err != nil {
			return 0, "", fmt.Errorf("%s: %w", c.Key, err)
		}
		gpa += c.Weight * p
	}
	score := math.Round(gpa/4*100) / 10
	return score, letter(gpa), nil
}

// letter turns a grade-point average into a letter, rounding to the
// nearest grade.
func letter(gpa float64) string {
	switch {
	case gpa >= 3.5:
		return "A"
	case gpa >= 2.5:
		return "B"
	case gpa >= 1.5:
		return "C"
	case gpa >= 0.5:
		return "D"
	}
	return "F"
}
