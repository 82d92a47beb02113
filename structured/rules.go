package structured

import (
	"errors"
	"fmt"
	"strings"
)

// Checker is implemented by reply types with rules a JSON Schema cannot
// express (counts that depend on nothing else, cross-field consistency,
// derived values). Check is called on every decoded reply, after the
// schema's hard rules passed and the generic repairs (coerced types,
// clamped ranges, trimmed lists) were applied; it reports what is still
// wrong to p, each problem hard or with its repair.
type Checker interface {
	Check(p *Problems)
}

// Validator is the older form of Checker: every error it returns is hard.
// Types that can repair what they find implement Checker instead.
type Validator interface {
	Validate() error
}

// Problems collects what is wrong with one decoded reply. Rules report to it
// with Hard, Fix or Ask; Generate then re-asks the model, applies the
// repairs, or fails the step. A Problems is used by one goroutine.
type Problems struct {
	list []problem
}

type problem struct {
	rule string
	// msg is what is wrong, in words the model can act on when re-asked.
	msg string
	// hard problems make the reply unusable.
	hard bool
	// ask: soft, but only the model can supply what is missing, so the
	// reply is sent back once before fix is applied.
	ask bool
	// fix applies the repair and says what it did; nil for hard problems.
	fix func() string
}

// Hard reports that the reply is unusable: a required value is missing or
// nothing usable is left. The reply is sent back once with msg; a second
// unusable reply fails the step.
func (p *Problems) Hard(rule, msg string) {
	p.list = append(p.list, problem{rule: rule, msg: msg, hard: true})
}

// Hardf is Hard with a formatted message.
func (p *Problems) Hardf(rule, format string, args ...any) {
	p.Hard(rule, fmt.Sprintf(format, args...))
}

// Fix reports a soft problem that fix repairs deterministically, at once and
// without asking the model again. fix changes the reply and returns what it
// did in a few words ("index 5 → 4"); it is called once, after every rule
// has run, in the order the problems were reported.
func (p *Problems) Fix(rule, msg string, fix func() string) {
	p.list = append(p.list, problem{rule: rule, msg: msg, fix: fix})
}

// Ask reports a soft problem that only the model can fix, such as too few
// items to go on with: the reply is sent back once with msg, and if the new
// reply still has the problem, fix repairs it with what there is.
func (p *Problems) Ask(rule, msg string, fix func() string) {
	p.list = append(p.list, problem{rule: rule, msg: msg, ask: true, fix: fix})
}

// hard returns the hard problems as one error, or nil.
func (p *Problems) hardErr() error {
	var msgs []string
	for _, pr := range p.list {
		if pr.hard {
			msgs = append(msgs, pr.msg)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// askErr returns the soft problems that only the model can fix, as one
// error, or nil.
func (p *Problems) askErr() error {
	var msgs []string
	for _, pr := range p.list {
		if pr.ask {
			msgs = append(msgs, pr.msg)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

// apply runs the repairs of the soft problems and returns what they did.
func (p *Problems) apply() []fixed {
	var out []fixed
	for _, pr := range p.list {
		if pr.hard || pr.fix == nil {
			continue
		}
		if action := pr.fix(); action != "" {
			out = append(out, fixed{rule: pr.rule, action: action})
		}
	}
	return out
}

// fromError adds err, from a Validator or a check, as a hard problem.
func (p *Problems) fromError(err error) {
	if err != nil {
		p.Hard("rule", err.Error())
	}
}
