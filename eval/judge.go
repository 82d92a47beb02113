package eval

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/madspark/madspark/structured"
)

// kind is what the eval knows of one pipeline: what a single call is asked
// for so that it delivers what the pipeline delivers, the rubric the judge
// applies, and which parameters make up the request both sides answer.
type kind struct {
	deliverable string
	rubric      string
	// fields are the parameters shown as the request, in order; none means
	// every parameter.
	fields []string
	// keep, if set, names the only sections of the pipeline's document
	// that make up its answer; drop names sections left out of it. Both
	// leave out how the pipeline worked, which would tell the judge which
	// answer is whose.
	keep, drop []string
}

// kinds are the registered pipelines the eval has a rubric for; another
// pipeline gets the general one.
var kinds = map[string]kind{
	"spark": {
		deliverable: "Propose ideas for the topic below, within its context. Think of several candidate ideas, keep the best ones (as many as num_top_candidates says), and for each one give: the idea; a score from 0 to 10 with a critique; the case for it (strengths, opportunities, how its concerns can be met); the case against it (critical flaws, risks, questionable assumptions, missing considerations); and an improved version of the idea that answers the criticism, with its new score.",
		rubric:      "- Ideas: original, feasible and likely to have impact for this topic and context.\n- Critique: honest about weaknesses and risks, not flattering.\n- Improvement: the improved ideas really answer the criticism.\n- Usefulness: someone could act on the result.",
		fields:      []string{"topic", "context", "num_top_candidates"},
		drop:        []string{"Overview"},
	},
	"chaos": {
		deliverable: "Generate bold, creative ideas for the prompt below: explore unexpected angles and combinations, judge your own ideas strictly, and present the ones worth keeping, each with a name, a description, a quality score from 0 to 10 and why it was kept, then a short synthesis of the best direction.",
		rubric:      "- Creativity: novel, surprising ideas rather than the obvious ones.\n- Diversity: the ideas explore different directions.\n- Quality: the kept ideas are coherent and could work.\n- Synthesis: a clear view of the best direction.",
		fields:      []string{"prompt"},
		drop:        []string{"Tournament"},
	},
	"debate": {
		deliverable: "Answer the query below as well as you can: reason it through, consider the objections, and give a complete, correct answer.",
		rubric:      "- Correctness: the answer is right, and its claims are supported.\n- Completeness: it answers everything the query asks.\n- Reasoning: the steps are sound and objections are considered.\n- Clarity: it is easy to follow.",
		fields:      []string{"query", "history"},
		keep:        []string{"Answer", "Sources"},
	},
	"assess": {
		deliverable: "Evaluate the idea below as an expert reviewer would: analyse its problem, market or audience, feasibility, risks and competition, check the claims you rely on, then give a verdict with grades and the reasons for them, and what would have to change for it to succeed.",
		rubric:      "- Depth: the analysis covers what decides the idea's fate.\n- Balance: strengths and risks are weighed honestly, with evidence.\n- Verdict: clear grades and a verdict that follow from the analysis.\n- Actionability: the person knows what to do next.",
		fields:      []string{"idea"},
		drop:        []string{"Review iterations"},
	},
	"proposal": {
		deliverable: "Write a research proposal for the researcher described below: the problem and its research questions, grounded in the literature; a general objective and specific, measurable objectives with deadlines; the methodology with its justification and phases; data collection (techniques, tools, sample, schedule); all within the researcher's timeline and resources.",
		rubric:      "- Coherence: problem, questions, objectives and methods fit together.\n- Rigour: the methodology and data collection can answer the questions.\n- Feasibility: the plan fits the timeline and resources.\n- Grounding: claims about the literature are credible and specific.",
		fields:      []string{"profile"},
	},
}

// general is the kind of a pipeline without its own.
var general = kind{
	deliverable: "Do what the request below asks, completely, in one reply.",
	rubric:      "- Quality: correct, complete and well reasoned.\n- Usefulness: it serves the person who asked.\n- Clarity: it is easy to follow.",
}

func kindOf(pipeline string) kind {
	if k, ok := kinds[pipeline]; ok {
		return k
	}
	return general
}

// requestText is the request both sides answer, from a topic's
// parameters: the fields of its kind that are set, one per line.
func requestText(pipeline string, params map[string]any) string {
	fields := kindOf(pipeline).fields
	if len(fields) == 0 {
		for f := range params {
			fields = append(fields, f)
		}
		sort.Strings(fields)
	}
	var b strings.Builder
	for _, f := range fields {
		v, ok := params[f]
		if !ok || v == nil || v == "" {
			continue
		}
		if s, ok := v.([]any); ok && len(s) == 0 {
			continue
		}
		text, isString := v.(string)
		if !isString {
			raw, _ := json.MarshalIndent(v, "", "  ")
			text = string(raw)
		}
		fmt.Fprintf(&b, "%s: %s\n", f, text)
	}
	return strings.TrimSpace(b.String())
}

// maxAnswer is how much of an answer the judge reads, in characters.
const maxAnswer = 24000

// clip cuts s to maxAnswer characters, saying so.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxAnswer {
		return s
	}
	return string([]rune(s)[:maxAnswer]) + "\n\n[… the rest of this answer was cut for length]"
}

// Verdict is the judge's reply: which of the two answers is better, and
// why.
type Verdict struct {
	Winner  string `json:"winner" jsonschema:"enum=A,enum=B,enum=tie,description=A or B for the better answer; tie if neither is clearly better"`
	Reasons string `json:"reasons" jsonschema:"description=Why, in one or two short sentences"`
}

// maxReasons is the length, in characters, a verdict's reasons are cut to.
const maxReasons = 600

// Check reads a verdict's rules: reasons are asked for once when missing
// (then the verdict is kept without them), and cut when much too long.
func (v *Verdict) Check(p *structured.Problems) {
	if strings.TrimSpace(v.Reasons) == "" {
		p.Ask("length", "reasons is empty: say why in one or two sentences", func() string {
			v.Reasons = ""
			return "kept a verdict without reasons"
		})
	}
	if n := utf8.RuneCountInString(v.Reasons); n > maxReasons {
		p.Fix("length", "reasons is too long", func() string {
			v.Reasons = string([]rune(v.Reasons)[:maxReasons-1]) + "…"
			return fmt.Sprintf("reasons cut from %d to %d characters", n, maxReasons)
		})
	}
}

// verdictSynonyms are the words judges use for A, B and a tie.
var verdictSynonyms = map[string]string{
	"answer a": "A", "first": "A", "first answer": "A", "1": "A", "answer 1": "A",
	"answer b": "B", "second": "B", "second answer": "B", "2": "B", "answer 2": "B",
	"draw": "tie", "equal": "tie", "neither": "tie", "both": "tie", "same": "tie", "tied": "tie", "none": "tie",
}

// Agents lists the eval's agents whose replies are JSON: the judge, with
// the Spec its verdicts are read with.
func Agents() ([]structured.Agent, error) {
	s, err := newVerdictSpec()
	if err != nil {
		return nil, err
	}
	return []structured.Agent{{Name: "eval.judge", Spec: s}}, nil
}

func newVerdictSpec() (*structured.Spec[Verdict], error) {
	s, err := structured.NewSpec[Verdict]("eval_verdict")
	if err != nil {
		return nil, err
	}
	return s.WithSynonyms(verdictSynonyms), nil
}
