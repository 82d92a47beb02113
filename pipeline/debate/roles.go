package debate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/madspark/madspark/llm"
)

// Role is an agent's part in a debate: the three proposers of seed §4.1,
// the aggregator that writes the final answer, and the direct answerer of
// simple queries.
type Role string

// The roles.
const (
	Drafter     Role = "drafter"
	Critic      Role = "critic"
	Synthesizer Role = "synthesizer"
	Aggregator  Role = "aggregator"
	Direct      Role = "direct"
)

// Proposers are the roles that propose, in order.
var Proposers = []Role{Drafter, Critic, Synthesizer}

// RoleConfig is how one role runs.
type RoleConfig struct {
	Temperature float64 `json:"temperature"`
	MaxTokens   int     `json:"max_tokens"`
	// Provider and Model, when set, send this role to another provider or
	// model than the run's default.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// TopP, Stop and Seed, when set, are sent with the role's calls: the
	// nucleus sampling mass, sequences that end the reply, and a seed.
	TopP *float64 `json:"top_p,omitempty"`
	Stop []string `json:"stop,omitempty"`
	Seed *int64   `json:"seed,omitempty"`
	// ReasoningEffort and Verbosity, when set, are sent with the role's
	// calls (llm.Request's).
	ReasoningEffort string `json:"reasoning_effort,omitempty" jsonschema:"enum=none,enum=minimal,enum=low,enum=medium,enum=high,enum=xhigh,enum=max"`
	Verbosity       string `json:"verbosity,omitempty" jsonschema:"enum=low,enum=medium,enum=high"`
}

// MaxStop is how many stop sequences a role may have (OpenAI's limit).
const MaxStop = 4

// check reports the first setting of c out of range, naming its field.
func (c RoleConfig) check() error {
	switch {
	case c.Temperature < 0 || c.Temperature > 2:
		return fmt.Errorf("temperature must be within 0..2, got %g", c.Temperature)
	case c.MaxTokens < 0:
		return fmt.Errorf("max_tokens must not be negative, got %d", c.MaxTokens)
	case c.TopP != nil && (*c.TopP < 0 || *c.TopP > 1):
		return fmt.Errorf("top_p must be within 0..1, got %g", *c.TopP)
	case len(c.Stop) > MaxStop:
		return fmt.Errorf("stop: at most %d sequences, got %d", MaxStop, len(c.Stop))
	case c.ReasoningEffort != "" && !slices.Contains(llm.ReasoningEfforts, c.ReasoningEffort):
		return fmt.Errorf("reasoning_effort must be one of %s, got %q", strings.Join(llm.ReasoningEfforts, ", "), c.ReasoningEffort)
	case c.Verbosity != "" && !slices.Contains(llm.Verbosities, c.Verbosity):
		return fmt.Errorf("verbosity must be one of %s, got %q", strings.Join(llm.Verbosities, ", "), c.Verbosity)
	}
	for i, s := range c.Stop {
		if s == "" {
			return fmt.Errorf("stop[%d] is empty", i)
		}
	}
	return nil
}

// apply puts c's sampling settings on req.
func (c RoleConfig) apply(req *llm.Request) {
	req.Provider, req.TopP, req.Stop, req.Seed = c.Provider, c.TopP, c.Stop, c.Seed
	req.ReasoningEffort, req.Verbosity = c.ReasoningEffort, c.Verbosity
}

// DefaultRoles returns the seed's configs (drafter 0.7/512, critic 0.3/384,
// synthesizer 0.5/768) plus the aggregator's and the direct answerer's.
func DefaultRoles() map[Role]RoleConfig {
	return map[Role]RoleConfig{
		Drafter:     {Temperature: 0.7, MaxTokens: 512},
		Critic:      {Temperature: 0.3, MaxTokens: 384},
		Synthesizer: {Temperature: 0.5, MaxTokens: 768},
		Aggregator:  {Temperature: 0.4, MaxTokens: 1024},
		Direct:      {Temperature: 0.6, MaxTokens: 1024},
	}
}

// ParseRoleConfig applies an override "role=temperature/max_tokens" (either
// part may be empty, as in "critic=0.2/" or "drafter=/600") to roles.
func ParseRoleConfig(roles map[Role]RoleConfig, spec string) error {
	name, val, ok := strings.Cut(spec, "=")
	role := Role(strings.ToLower(strings.TrimSpace(name)))
	cfg, known := roles[role]
	if !ok || !known {
		return fmt.Errorf("role config %q: want ROLE=TEMPERATURE/MAX_TOKENS with ROLE one of drafter, critic, synthesizer, aggregator, direct", spec)
	}
	temp, tokens, _ := strings.Cut(val, "/")
	if t := strings.TrimSpace(temp); t != "" {
		f, err := strconv.ParseFloat(t, 64)
		if err != nil || f < 0 || f > 2 {
			return fmt.Errorf("role config %q: temperature must be a number within 0..2", spec)
		}
		cfg.Temperature = f
	}
	if m := strings.TrimSpace(tokens); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 64 || n > 32768 {
			return fmt.Errorf("role config %q: max tokens must be an integer within 64..32768", spec)
		}
		cfg.MaxTokens = n
	}
	roles[role] = cfg
	return nil
}

// ParseProposerModels assigns "[provider:]model" entries, comma-separated,
// to the proposers in order (drafter, critic, synthesizer); fewer entries
// leave the rest on the default.
func ParseProposerModels(roles map[Role]RoleConfig, spec string) error {
	if strings.TrimSpace(spec) == "" {
		return nil
	}
	parts := strings.Split(spec, ",")
	if len(parts) > len(Proposers) {
		return fmt.Errorf("proposer models %q: at most %d entries, one per proposer", spec, len(Proposers))
	}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		cfg := roles[Proposers[i]]
		if prov, model, ok := strings.Cut(p, ":"); ok {
			switch prov {
			case "mock", "openai", "ollama", "gemini", "anthropic":
			default:
				return fmt.Errorf("proposer models: unknown provider %q in %q", prov, p)
			}
			cfg.Provider, cfg.Model = prov, model
		} else {
			cfg.Model = p
		}
		roles[Proposers[i]] = cfg
	}
	return nil
}
