// Package debate is seed 003's MoA-Lite debate assistant:
//
//	query → complexity router (heuristic, no LLM call)
//	  simple:  one direct, streamed answer
//	  complex: proposers (drafter ∥ critic ∥ synthesizer) post structured
//	           handoffs of 150-300 tokens to a blackboard
//	           [× rounds: each round reads the others' handoffs and revises]
//	           [peer review: each proposer ranks the anonymised handoffs]
//	           → the aggregator reads the blackboard AND the original query
//	             and streams the final answer
//
// Web search, when a provider is configured, starts with the first round's
// proposers, none of which waits for it, so its latency is hidden; it posts
// its results to the blackboard, and proposers of later rounds and the
// aggregator get them.
// An explicit state machine (Machine) drives the orchestration; every
// transition is logged and recorded in the result.
package debate

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/madspark/madspark/agent"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/structured"
)

//go:embed prompts/*.tmpl
var promptFS embed.FS

// Agent names.
const (
	agentDirect    = "debate.direct"
	agentPropose   = "debate.propose"
	agentReview    = "debate.review"
	agentAggregate = "debate.aggregate"
)

// MaxSearchResults is how many web results a debate uses at most.
const MaxSearchResults = 3

// Params are the inputs of a debate.
type Params struct {
	Query string `json:"query" jsonschema:"required,title=Query,description=The question the debate answers"`
	// History is the conversation before the query, oldest first.
	History []llm.Message `json:"history,omitempty" jsonschema:"title=Conversation history,description=Messages before the query\\, oldest first\\, each with a role and content"`
	// Mode is auto (route by complexity), simple or complex.
	Mode string `json:"mode" jsonschema:"enum=auto,enum=simple,enum=complex,title=Mode,description=auto routes by the query's complexity; simple answers directly; complex debates"`
	// Rounds of proposing, 1-5; from round 2 proposers revise after
	// reading each other's handoffs.
	Rounds int `json:"rounds" jsonschema:"minimum=1,maximum=5,title=Rounds,description=Rounds of proposing; from the second\\, proposers revise after reading each other"`
	// PeerReview has each proposer rank the others' anonymised handoffs;
	// the aggregator sees the aggregate ranking.
	PeerReview bool                `json:"peer_review" jsonschema:"title=Peer review,description=Each proposer ranks the others' anonymised contributions for the aggregator"`
	Roles      map[Role]RoleConfig `json:"roles" jsonschema:"title=Roles,description=Temperature\\, token limit\\, provider and model of each role"`
	// NoSearch turns web search off.
	NoSearch bool `json:"no_search" jsonschema:"title=No web search,description=Answer without searching the web"`
	// Instructions are the asker's own instructions, such as a chat
	// client's system messages: the agent that writes the answer (the
	// direct answerer or the aggregator) gets them after its own, and the
	// proposers are told the answer must follow them.
	Instructions string `json:"instructions" jsonschema:"title=Instructions,description=Your own instructions for the answer (such as a chat's system message); they come after madspark's"`
	// Format, when set, asks for the answer as JSON of a schema.
	Format *Format `json:"format,omitempty" jsonschema:"title=Answer format,description=Ask for the answer as JSON: an object with name (the schema's name)\\, schema (a JSON Schema; none for any JSON object) and strict (true to have the provider hold the reply to the schema exactly where it can)"`
	// Tools are functions the answer may call (see tools.go): the step
	// that writes it gets them, with ToolChoice and ParallelToolCalls, and
	// its calls are the result's ToolCalls. Turns are the answer's calls
	// so far and their results, after the query. They are set by the
	// OpenAI-compatible API, whose clients run the calls, and are
	// read-only in the schema (not in the forms).
	Tools             []llm.Tool      `json:"tools,omitempty" jsonschema:"title=Tools,description=Functions the answer may call: each with a name\\, a description and the JSON Schema of its parameters"`
	ToolChoice        *llm.ToolChoice `json:"tool_choice,omitempty" jsonschema:"title=Tool choice,description=Whether the answer may (auto)\\, must (required\\, with the name of one tool or none) or must not (none) call tools"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls,omitempty" jsonschema:"title=Parallel tool calls,description=Allow more than one tool call in the answer"`
	Turns             []llm.Message   `json:"turns,omitempty" jsonschema:"title=Tool turns,description=The answer's tool calls so far and their results\\, after the query"`
}

// DefaultParams returns a one-round, auto-routed debate with the seed's
// role configs.
func DefaultParams() Params {
	return Params{Mode: "auto", Rounds: 1, Roles: DefaultRoles()}
}

// Validate reports the first problem with p in one line.
func (p *Params) Validate() error {
	if err := input.Check(p); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(p.Query) == "":
		return errors.New("query must not be empty")
	case len(p.Query) > 32000:
		return errors.New("query is longer than 32000 bytes")
	case len(p.Instructions) > 32000:
		return errors.New("instructions are longer than 32000 bytes")
	}
	if p.Format != nil {
		if err := p.Format.check(); err != nil {
			return err
		}
	}
	if err := p.checkTools(); err != nil {
		return err
	}
	return p.ValidateSettings()
}

// ValidateSettings checks every parameter but the query, as Validate does:
// what a command can check from its flags before it reads a query.
func (p *Params) ValidateSettings() error {
	switch {
	case p.Mode != "auto" && p.Mode != "simple" && p.Mode != "complex":
		return fmt.Errorf("mode must be auto, simple or complex, got %q", p.Mode)
	case p.Rounds < 1 || p.Rounds > 5:
		return fmt.Errorf("rounds must be 1..5, got %d", p.Rounds)
	}
	for _, r := range append(Proposers, Aggregator, Direct) {
		cfg, ok := p.Roles[r]
		if !ok {
			return fmt.Errorf("no config for role %s", r)
		}
		if err := cfg.check(); err != nil {
			return fmt.Errorf("roles.%s.%w", r, err)
		}
	}
	return nil
}

// RankedRole is a proposer's place in the peer review.
type RankedRole struct {
	Role Role `json:"role"`
	// Points is the Borda count: for each reviewer, the number of
	// contributions ranked below this one.
	Points int `json:"points"`
}

// Result is a finished debate.
type Result struct {
	Query  string `json:"query"`
	Answer string `json:"answer"`
	Route  Route  `json:"route"`
	// Path is the path taken: simple or complex (Route may differ when
	// Mode forced it).
	Path        Level            `json:"path"`
	Rounds      int              `json:"rounds"`
	Handoffs    []HandoffMessage `json:"handoffs,omitempty"`
	Ranking     []RankedRole     `json:"ranking,omitempty"`
	Sources     []search.Result  `json:"sources,omitempty"`
	SearchNote  string           `json:"search_note,omitempty"`
	Transitions []Transition     `json:"transitions"`
	// Repairs are the changes made to usable replies that broke a soft
	// rule (a handoff outside its token budget, a ranking with unknown or
	// missing entries, a reply in prose); empty, never null, when none.
	Repairs []llm.Repair `json:"repairs"`
	// FinishReason is why the model that wrote the answer stopped, as its
	// provider said: "stop", "length" when the answer was cut off at its
	// token limit, or "tool_calls" when it calls tools.
	FinishReason string `json:"finish_reason,omitempty"`
	// ToolCalls are the asker's tools the answer calls (see Params.Tools).
	ToolCalls []llm.ToolCall `json:"tool_calls,omitempty"`
}

// Pipeline runs debates. It is safe for concurrent use.
type Pipeline struct {
	count    func(string) int
	searcher search.Provider
	logger   *slog.Logger

	direct, propose, review, aggregate *agent.Agent
	proposal                           *structured.Spec[proposal]
	ranking                            *structured.Spec[ranking]
	formats                            *formats
}

// proposal is a proposer's reply: the content of its handoff.
type proposal struct {
	ContextSummary string   `json:"context_summary" jsonschema:"minLength=1"`
	KeyPoints      []string `json:"key_points" jsonschema:"minItems=1,maxItems=8"`
	// ConfidenceScore is nil when the reply gave none.
	ConfidenceScore *float64 `json:"confidence_score,omitempty" jsonschema:"minimum=0,maximum=1"`
	// prose marks a proposal read from a reply in plain text, which states
	// no confidence.
	prose bool
}

// bullet matches a list item of a prose reply: "- x", "* x", "• x", "1. x".
var bullet = regexp.MustCompile(`^\s*(?:[-*•]|\d+[.)])\s+(.+)$`)

// proseProposal reads a proposer's reply written in prose instead of JSON:
// the text is the summary, and its list items, if any, the key points.
func proseProposal(text string) proposal {
	p := proposal{prose: true, KeyPoints: []string{}}
	var summary []string
	for _, line := range strings.Split(text, "\n") {
		if m := bullet.FindStringSubmatch(line); m != nil && len(p.KeyPoints) < 8 {
			p.KeyPoints = append(p.KeyPoints, strings.TrimSpace(m[1]))
			continue
		}
		summary = append(summary, line)
	}
	p.ContextSummary = strings.TrimSpace(strings.Join(summary, "\n"))
	if p.ContextSummary == "" {
		// A reply that is only a list: the list is the summary too.
		p.ContextSummary = strings.Join(p.KeyPoints, " ")
	}
	return p
}

// Check records that a proposal read from prose states no confidence: it
// is left out, not assumed.
func (p *proposal) Check(pr *structured.Problems) {
	if p.prose {
		pr.Fix("prose", "the reply gave no confidence_score", func() string {
			return "confidence_score not given: the reply in prose stated none"
		})
	}
}

// ranking is a reviewer's reply.
type ranking struct {
	Ranking []string `json:"ranking" jsonschema:"minItems=1"`
	Reasons string   `json:"reasons,omitempty"`
}

// New prepares the pipeline. count counts tokens (see Tokenizer); searcher
// may be nil for no web search; logger may be nil.
func New(count func(string) int, searcher search.Provider, logger *slog.Logger) (*Pipeline, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{count: count, searcher: searcher, logger: logger, formats: newFormats()}
	var errs []error
	for _, a := range []struct {
		dst  **agent.Agent
		name string
	}{{&p.direct, agentDirect}, {&p.propose, agentPropose}, {&p.review, agentReview}, {&p.aggregate, agentAggregate}} {
		var err error
		*a.dst, err = agent.New(promptFS, a.name, "prompts/"+strings.TrimPrefix(a.name, "debate.")+".tmpl")
		errs = append(errs, err)
	}
	var err error
	p.proposal, err = structured.NewSpec[proposal]("debate_handoff")
	errs = append(errs, err)
	if p.proposal != nil {
		p.proposal.WithProse(proseProposal)
	}
	p.ranking, err = structured.NewSpec[ranking]("debate_ranking")
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("debate: %w", err)
	}
	return p, nil
}

// StructuredAgents lists the pipeline's agents whose replies are JSON, with the
// Specs their replies are read with.
func (p *Pipeline) StructuredAgents() []structured.Agent {
	return []structured.Agent{{Name: agentPropose, Spec: p.proposal}, {Name: agentReview, Spec: p.ranking}}
}

// Route classifies a query without calling a model.
func (p *Pipeline) Route(query string) Route { return Classify(query, p.count) }

// The inputs each agent's prompt is rendered from.
type (
	// Instructions and Format are left out of a journaled input when
	// empty, so that the inputs of earlier runs hash as they did.
	directInput struct {
		Query        string
		History      []llm.Message
		Instructions string  `json:",omitempty"`
		Format       *Format `json:",omitempty"`
		toolUse
	}
	proposeInput struct {
		Query        string
		History      []llm.Message
		Role         Role
		Round        int
		Sources      string
		Peers        []HandoffMessage
		Instructions string `json:",omitempty"`
	}
	reviewEntry struct{ Label, Text string }
	reviewInput struct {
		Query    string
		Reviewer Role
		Entries  []reviewEntry
	}
	aggregateInput struct {
		Query        string
		History      []llm.Message
		Handoffs     []HandoffMessage
		Ranking      string
		Sources      string
		Instructions string  `json:",omitempty"`
		Format       *Format `json:",omitempty"`
		toolUse
	}
)

// Run answers in.Query as run r. onDelta, if not nil, receives the final
// answer as it streams.
func (p *Pipeline) Run(ctx context.Context, r *engine.Run, in Params, onDelta func(string)) (*Result, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	m := NewMachine(in.Rounds, in.PeerReview, func(t Transition) {
		p.logger.Info("debate transition", "run", r.ID(), "from", t.From, "event", t.Event, "to", t.To, "round", t.Round, "detail", t.Detail)
	})
	res := &Result{Query: in.Query}
	fail := func(err error) (*Result, error) {
		_ = m.Fire(ErrorOccurred, oneLine(err.Error()))
		return nil, err
	}
	if err := m.Fire(QueryReceived, ""); err != nil {
		return nil, err
	}
	res.Route = p.Route(in.Query)
	res.Path = res.Route.Level
	if in.Mode != "auto" {
		res.Path = Level(in.Mode)
	}
	// Progress events are published beside the calls that follow them,
	// in order: each is a database write, which the first call's time to
	// its first token should not wait for.
	events := &aside{r: r}
	defer events.wait()
	events.emit("route", 5, fmt.Sprintf("%s (confidence %.2f)", res.Path, res.Route.Confidence))

	if res.Path == Simple {
		if err := m.Fire(ComplexitySimple, fmt.Sprintf("confidence %.2f", res.Route.Confidence)); err != nil {
			return nil, err
		}
		di := directInput{Query: in.Query, History: in.History, Instructions: in.Instructions, Format: in.Format, toolUse: toolUseOf(in)}
		answer, err := p.answer(ctx, r, "direct", p.direct, di, in, in.Roles[Direct], onDelta)
		if err != nil {
			return fail(err)
		}
		res.Answer, res.FinishReason, res.ToolCalls = answer.Text, answer.FinishReason, answer.ToolCalls
		if err := m.Fire(GenerationDone, ""); err != nil {
			return nil, err
		}
		res.Transitions = m.History()
		res.Repairs = r.Repairs()
		return res, nil
	}

	if err := m.Fire(ComplexityComplex, fmt.Sprintf("confidence %.2f", res.Route.Confidence)); err != nil {
		return nil, err
	}
	res.Rounds = in.Rounds
	board := NewBlackboard(p.count)
	conv := r.ID()

	// The web search starts with the round-1 proposers, none of which waits
	// for it: its latency is hidden behind theirs. It posts its results to
	// the blackboard, where proposers of later rounds and the aggregator
	// read them.
	searchCtx, stopSearch := context.WithCancel(ctx)
	defer stopSearch()
	var searchNote string // written before the results are posted
	go func() {
		s, note := p.webSearch(searchCtx, r, in)
		searchNote = note
		board.PostSources(s)
	}()

	for round := 1; round <= in.Rounds; round++ {
		events.emit("propose", 10+70*(round-1)/in.Rounds, fmt.Sprintf("round %d: drafter, critic and synthesizer", round))
		peers := board.Round(round - 1)
		g, gctx := errgroup.WithContext(ctx)
		posted := make(chan Role, len(Proposers))
		for _, role := range Proposers {
			g.Go(func() error {
				pi := proposeInput{Query: in.Query, History: textHistory(in.History), Role: role, Round: round, Peers: peers, Instructions: in.Instructions}
				if round > 1 {
					s, err := board.Sources(gctx)
					if err != nil {
						return fmt.Errorf("%s: %w", role, err)
					}
					pi.Sources = search.FormatForContext(s)
				}
				h, err := p.proposeStep(gctx, r, board, conv, pi, in.Roles[role])
				if err != nil {
					return fmt.Errorf("%s: %w", role, err)
				}
				board.Post(h)
				posted <- role
				return nil
			})
		}
		err := g.Wait()
		close(posted)
		for role := range posted {
			if ferr := m.Fire(ProposalComplete, string(role)); ferr != nil {
				return nil, ferr
			}
		}
		if err != nil {
			return fail(err)
		}
		if round < in.Rounds {
			if err := m.Fire(RoundComplete, ""); err != nil {
				return nil, err
			}
		}
	}
	if err := m.Fire(AllProposalsComplete, ""); err != nil {
		return nil, err
	}
	final := board.Round(in.Rounds)
	res.Handoffs = board.All()

	if in.PeerReview {
		events.emit("review", 80, "proposers rank each other")
		ranked, err := p.peerReview(ctx, r, in, final)
		if err != nil {
			return fail(err)
		}
		res.Ranking = ranked
		if err := m.Fire(ReviewsComplete, ""); err != nil {
			return nil, err
		}
	}

	sources, err := board.Sources(ctx)
	if err != nil {
		return fail(err)
	}
	res.Sources, res.SearchNote = sources, searchNote
	events.emit("aggregate", 90, "aggregator writes the answer")
	ai := aggregateInput{Query: in.Query, History: in.History, Handoffs: final, Sources: search.FormatForContext(sources),
		Instructions: in.Instructions, Format: in.Format, toolUse: toolUseOf(in)}
	if len(res.Ranking) > 0 {
		var parts []string
		for _, rr := range res.Ranking {
			parts = append(parts, fmt.Sprintf("%s (%d points)", rr.Role, rr.Points))
		}
		ai.Ranking = strings.Join(parts, ", ")
	}
	answer, err := p.answer(ctx, r, "aggregate", p.aggregate, ai, in, in.Roles[Aggregator], onDelta)
	if err != nil {
		return fail(err)
	}
	res.Answer, res.FinishReason, res.ToolCalls = answer.Text, answer.FinishReason, answer.ToolCalls
	if err := m.Fire(SynthesisComplete, ""); err != nil {
		return nil, err
	}
	res.Transitions = m.History()
	res.Repairs = r.Repairs()
	events.emit("done", 100, "done")
	return res, nil
}

// aside publishes a run's progress events in order, each without holding
// up what follows it.
type aside struct {
	r    *engine.Run
	last chan struct{} // closed when the last event sent is published
}

// emit publishes the event once those sent before are.
func (a *aside) emit(stage string, progress int, message string) {
	if a.last == nil && a.r.Held() {
		// The run holds its events in memory: nothing to wait for.
		a.r.Emit(stage, progress, message)
		return
	}
	prev, done := a.last, make(chan struct{})
	a.last = done
	go func() {
		defer close(done)
		if prev != nil {
			<-prev
		}
		a.r.Emit(stage, progress, message)
	}()
}

// wait blocks until every event sent is published.
func (a *aside) wait() {
	if a.last != nil {
		<-a.last
	}
}

// written is the answer a step wrote, as journaled.
type written struct {
	Text string `json:"text"`
	// FinishReason is the provider's for the reply used.
	FinishReason string `json:"finish_reason,omitempty"`
	// ToolCalls are the asker's tools the answer calls.
	ToolCalls []llm.ToolCall `json:"tool_calls,omitempty"`
}

// UnmarshalJSON reads a journaled answer, also from before it carried its
// finish reason (a JSON string).
func (w *written) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		*w = written{}
		return json.Unmarshal(data, &w.Text)
	}
	type plain written
	return json.Unmarshal(data, (*plain)(w))
}

// answer runs the agent that writes the answer as a journaled step, with
// in's instructions after its own and, when in has a Format, as JSON of its
// schema. A plain answer streams and is prose whatever shape it takes; an
// empty one (nothing was streamed) is asked for once more, and one cut off
// at the token limit, already streamed, is kept and the repair recorded. A
// JSON answer is read with the schema-aligned reader (repairs, one re-ask),
// checked against the schema and sent to onDelta whole once it is known
// good.
func (p *Pipeline) answer(ctx context.Context, r *engine.Run, key string, a *agent.Agent, input any, in Params, cfg RoleConfig, onDelta func(string)) (written, error) {
	var format *answerFormat
	if in.Format != nil {
		var err error
		if format, err = p.formats.get(in.Format); err != nil {
			return written{}, err
		}
	}
	return engine.Step(ctx, r, key, input, func(ctx context.Context, c llm.Client) (written, error) {
		req, err := a.Request(input, agent.Options{Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, Model: cfg.Model, Timeout: 3 * time.Minute})
		if err != nil {
			return written{}, err
		}
		cfg.apply(&req)
		if in.Instructions != "" {
			req.System += "\n\n" + in.Instructions
		}
		toolUseOf(in).apply(&req, in.History)
		if format != nil {
			return p.answerJSON(ctx, c, req, format, onDelta)
		}
		req.OnDelta = onDelta
		if req.OnDelta == nil {
			req.OnDelta = func(string) {}
		}
		for attempt := 0; ; attempt++ {
			resp, err := c.Generate(ctx, &req)
			if err != nil {
				return written{}, fmt.Errorf("%s: %w", a.Name(), err)
			}
			if strings.TrimSpace(resp.Text) == "" && len(resp.ToolCalls) == 0 {
				if attempt == 0 {
					continue
				}
				return written{}, &structured.ReplyError{Agent: a.Name(), Problem: errors.New("the answer was empty"), Raw: resp.Text}
			}
			if resp.Truncated() {
				llm.RecordRepair(ctx, llm.Repair{Agent: a.Name(), Rule: "length",
					Action: fmt.Sprintf("answer cut off at the %d-token limit, kept as streamed", cfg.MaxTokens)})
			}
			return written{Text: resp.Text, FinishReason: resp.FinishReason, ToolCalls: resp.ToolCalls}, nil
		}
	})
}

// answerJSON asks req for a JSON answer of format and returns it once it
// conforms, sending it to onDelta whole; or, when the reply calls tools
// instead, the calls.
func (p *Pipeline) answerJSON(ctx context.Context, c llm.Client, req llm.Request, format *answerFormat, onDelta func(string)) (written, error) {
	var finish string
	var calls []llm.ToolCall
	last := llm.ClientFunc(func(ctx context.Context, r *llm.Request) (*llm.Response, error) {
		if format.strict && r.Schema != nil {
			cp, schema := *r, *r.Schema
			schema.Strict = true
			cp.Schema = &schema
			r = &cp
		}
		resp, err := c.Generate(ctx, r)
		if err == nil {
			finish = resp.FinishReason
			if len(resp.ToolCalls) > 0 {
				// Not the JSON answer yet: the asker runs the calls first.
				calls = resp.ToolCalls
				return nil, errCalled
			}
		}
		return resp, err
	})
	v, _, err := format.spec.Generate(ctx, last, req, format.check)
	if calls != nil && errors.Is(err, errCalled) {
		return written{FinishReason: finish, ToolCalls: calls}, nil
	}
	if err != nil {
		return written{}, err
	}
	text, err := format.text(v)
	if err != nil {
		return written{}, fmt.Errorf("%s: %w", req.Agent, err)
	}
	if onDelta != nil {
		onDelta(text)
	}
	return written{Text: text, FinishReason: finish}, nil
}

// errCalled stops the reading of a JSON answer whose reply calls tools.
var errCalled = errors.New("the reply calls tools")

// proposeStep asks one proposer for its handoff. The token budget is a
// target: a handoff under it is kept, one over it trimmed at a sentence
// boundary, and either recorded as a repair; the handoff carries its count.
func (p *Pipeline) proposeStep(ctx context.Context, r *engine.Run, board *Blackboard, conv string, in proposeInput, cfg RoleConfig) (HandoffMessage, error) {
	key := fmt.Sprintf("r%d/%s", in.Round, in.Role)
	return engine.Step(ctx, r, key, in, func(ctx context.Context, c llm.Client) (HandoffMessage, error) {
		req, err := p.propose.Request(in, agent.Options{Temperature: cfg.Temperature, MaxTokens: cfg.MaxTokens, Model: cfg.Model, Timeout: 2 * time.Minute})
		if err != nil {
			return HandoffMessage{}, err
		}
		cfg.apply(&req)
		v, _, err := p.proposal.Generate(ctx, c, req, p.budgetRule)
		if err != nil {
			return HandoffMessage{}, err
		}
		return HandoffMessage{
			ConversationID: conv, FromRole: in.Role, ToRole: Aggregator, Round: in.Round,
			ContextSummary: v.ContextSummary, KeyPoints: v.KeyPoints, ConfidenceScore: v.ConfidenceScore,
			Timestamp: time.Now().UTC(), Tokens: handoffTokens(board.count, v.ContextSummary, v.KeyPoints),
		}, nil
	})
}

// budgetRule is the handoff token budget as a soft rule: a short handoff
// is kept as it is, a long one trimmed at a sentence boundary.
func (p *Pipeline) budgetRule(v *proposal, pr *structured.Problems) {
	n := handoffTokens(p.count, v.ContextSummary, v.KeyPoints)
	switch {
	case n < MinHandoffTokens:
		pr.Fix("budget", fmt.Sprintf("handoff has %d tokens, under the %d-%d target", n, MinHandoffTokens, MaxHandoffTokens), func() string {
			return fmt.Sprintf("handoff of %d tokens kept, under the %d-%d target", n, MinHandoffTokens, MaxHandoffTokens)
		})
	case n > MaxHandoffTokens:
		pr.Fix("budget", fmt.Sprintf("handoff has %d tokens, over the %d-%d target", n, MinHandoffTokens, MaxHandoffTokens), func() string {
			points := len(v.KeyPoints)
			v.ContextSummary, v.KeyPoints = trimToBudget(p.count, v.ContextSummary, v.KeyPoints, MaxHandoffTokens)
			action := fmt.Sprintf("handoff trimmed at a sentence boundary from %d to %d tokens", n, handoffTokens(p.count, v.ContextSummary, v.KeyPoints))
			if dropped := points - len(v.KeyPoints); dropped > 0 {
				action += fmt.Sprintf(", %d key point(s) dropped", dropped)
			}
			return action
		})
	}
}

// webSearch returns up to MaxSearchResults results, or none with a note
// saying why.
func (p *Pipeline) webSearch(ctx context.Context, r *engine.Run, in Params) ([]search.Result, string) {
	switch {
	case in.NoSearch:
		return nil, "web search off (--no-search)"
	case p.searcher == nil:
		return nil, "web search off: set TAVILY_API_KEY or BRAVE_API_KEY to enable it"
	}
	results, err := engine.Step(ctx, r, "search", in.Query, func(ctx context.Context, _ llm.Client) ([]search.Result, error) {
		return p.searcher.Search(ctx, in.Query, MaxSearchResults)
	})
	if err != nil && ctx.Err() != nil {
		return nil, "web search stopped: " + oneLine(ctx.Err().Error())
	}
	if err != nil {
		p.logger.Warn("web search failed; the debate goes on without it", "provider", p.searcher.Name(), "err", err)
		return nil, "web search failed: " + oneLine(err.Error())
	}
	if len(results) > MaxSearchResults {
		results = results[:MaxSearchResults]
	}
	return results, ""
}

// peerReview has every proposer rank the final handoffs, anonymised and in
// a different order for each reviewer, and returns the Borda ranking.
func (p *Pipeline) peerReview(ctx context.Context, r *engine.Run, in Params, final []HandoffMessage) ([]RankedRole, error) {
	n := len(final)
	points := map[Role]int{}
	g, gctx := errgroup.WithContext(ctx)
	results := make([][]Role, len(Proposers))
	for i, reviewer := range Proposers {
		g.Go(func() error {
			// Rotate the order per reviewer so no contribution always comes first.
			order := make([]HandoffMessage, n)
			for k := range final {
				order[k] = final[(k+i)%n]
			}
			ri := reviewInput{Query: in.Query, Reviewer: reviewer}
			label := map[string]Role{}
			var shown []string
			for k, h := range order {
				l := string(rune('A' + k))
				label[l] = h.FromRole
				shown = append(shown, l)
				ri.Entries = append(ri.Entries, reviewEntry{Label: l, Text: h.ContextSummary + "\nKey points: " + strings.Join(h.KeyPoints, "; ")})
			}
			cfg := in.Roles[reviewer]
			order2, err := engine.Step(gctx, r, "review/"+string(reviewer), ri, func(ctx context.Context, c llm.Client) ([]Role, error) {
				req, err := p.review.Request(ri, agent.Options{Temperature: 0.2, Model: cfg.Model, Timeout: 2 * time.Minute})
				if err != nil {
					return nil, err
				}
				req.Provider = cfg.Provider
				v, _, err := p.ranking.Generate(ctx, c, req, func(v *ranking, pr *structured.Problems) { rankingRule(shown, v, pr) })
				if err != nil {
					return nil, err
				}
				var roles []Role
				for _, l := range v.Ranking {
					roles = append(roles, label[l])
				}
				return roles, nil
			})
			results[i] = order2
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, ranked := range results {
		// A reviewer whose ranking was unusable abstains.
		for pos, role := range ranked {
			points[role] += n - 1 - pos
		}
	}
	var out []RankedRole
	for _, h := range final {
		out = append(out, RankedRole{Role: h.FromRole, Points: points[h.FromRole]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Points > out[j].Points })
	return out, nil
}

// labelRe finds a contribution's label in an entry of a ranking, such as
// "B", "b", "Contribution B" or "B." (one capital letter on its own).
var labelRe = regexp.MustCompile(`\b([A-Z])\b`)

// rankingRule repairs a reviewer's ranking of the contributions labelled
// shown, in the order they were shown: labels are read case-insensitively
// from entries such as "Contribution B", unknown entries are dropped,
// repeated ones kept at their first place, and missing ones appended in the
// order shown. A ranking with no known label is sent back once; if it is
// still unusable the reviewer abstains (an empty ranking).
func rankingRule(shown []string, v *ranking, pr *structured.Problems) {
	known := map[string]bool{}
	for _, l := range shown {
		known[l] = true
	}
	var clean, unknown, repeated []string
	seen := map[string]bool{}
	for _, entry := range v.Ranking {
		l := strings.TrimSpace(entry)
		if len(l) <= 40 {
			for _, m := range labelRe.FindAllStringSubmatch(strings.ToUpper(l), -1) {
				if known[m[1]] {
					l = m[1]
					break
				}
			}
		}
		switch {
		case !known[l]:
			unknown = append(unknown, entry)
		case seen[l]:
			repeated = append(repeated, l)
		default:
			seen[l] = true
			clean = append(clean, l)
		}
	}
	var missing []string
	for _, l := range shown {
		if !seen[l] {
			missing = append(missing, l)
		}
	}
	if len(clean) == 0 {
		pr.Ask("reference", fmt.Sprintf("the ranking must list the contributions %s, best first; got %q", strings.Join(shown, ", "), v.Ranking), func() string {
			v.Ranking = nil
			return fmt.Sprintf("no contribution named in %q: this review is left out of the ranking", truncate(fmt.Sprint(unknown), 80))
		})
		return
	}
	if len(unknown) > 0 {
		pr.Fix("reference", fmt.Sprintf("unknown contributions %q", unknown), func() string {
			return fmt.Sprintf("unknown entries %q dropped", truncate(strings.Join(unknown, ", "), 80))
		})
	}
	if len(repeated) > 0 {
		pr.Fix("index", fmt.Sprintf("contributions %s ranked twice", strings.Join(repeated, ", ")), func() string {
			return fmt.Sprintf("repeated %s dropped, first place kept", strings.Join(repeated, ", "))
		})
	}
	if len(missing) > 0 {
		pr.Fix("count", fmt.Sprintf("contributions %s not ranked", strings.Join(missing, ", ")), func() string {
			return fmt.Sprintf("unranked %s appended last, in the order shown", strings.Join(missing, ", "))
		})
	}
	v.Ranking = append(clean, missing...)
}

// truncate shortens s to at most n runes.
func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
