package flow

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Cond is a loop's until condition: comparisons of an agent's output field
// with a literal, joined by and (binding tighter) and or:
//
//	reviewer.verdict == 'approve' or reviewer.score >= 8
//
// The operators are == != < <= > >=; literals are 'text' or "text",
// numbers, true and false. Text compares ignoring case and surrounding
// spaces; < and the like compare numbers only.
type Cond struct {
	src  string
	line int
	or   [][]cmp // or of ands
}

type cmp struct {
	agent, field string
	op           string
	lit          any // string, float64 or bool
}

func (c *Cond) refs() []ref {
	var out []ref
	for _, and := range c.or {
		for _, x := range and {
			out = append(out, ref{path: []string{x.agent, x.field}, line: c.line})
		}
	}
	return out
}

// ParseCond parses a condition.
func ParseCond(src string) (*Cond, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	c := &Cond{src: src}
	var and []cmp
	for i := 0; ; {
		if i+2 >= len(toks) {
			return nil, errors.New("want agent.field OP value, such as reviewer.verdict == 'approve'")
		}
		agent, field, ok := strings.Cut(toks[i], ".")
		if !ok || !identRe.MatchString(agent) || !identRe.MatchString(field) {
			return nil, fmt.Errorf("%q is not agent.field", toks[i])
		}
		op := toks[i+1]
		switch op {
		case "==", "!=", "<", "<=", ">", ">=":
		default:
			return nil, fmt.Errorf("unknown operator %q (== != < <= > >=)", op)
		}
		lit, err := literal(toks[i+2])
		if err != nil {
			return nil, err
		}
		if _, isNum := lit.(float64); !isNum && op != "==" && op != "!=" {
			return nil, fmt.Errorf("%s compares numbers only", op)
		}
		and = append(and, cmp{agent: agent, field: field, op: op, lit: lit})
		i += 3
		if i == len(toks) {
			c.or = append(c.or, and)
			return c, nil
		}
		switch toks[i] {
		case "and":
		case "or":
			c.or = append(c.or, and)
			and = nil
		default:
			return nil, fmt.Errorf("want and or or, not %q", toks[i])
		}
		i++
	}
}

func literal(t string) (any, error) {
	switch {
	case strings.HasPrefix(t, "'") || strings.HasPrefix(t, `"`):
		return t[1 : len(t)-1], nil
	case t == "true" || t == "false":
		return t == "true", nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is not a value: quote text, as in 'approve'", t)
	}
	return f, nil
}

func lex(src string) ([]string, error) {
	var out []string
	r := []rune(src)
	for i := 0; i < len(r); {
		c := r[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(r) && r[j] != c {
				j++
			}
			if j == len(r) {
				return nil, errors.New("unterminated quote")
			}
			out = append(out, string(r[i:j+1]))
			i = j + 1
		case strings.ContainsRune("=!<>", c):
			j := i + 1
			if j < len(r) && r[j] == '=' {
				j++
			}
			out = append(out, string(r[i:j]))
			i = j
		default:
			j := i
			for j < len(r) && !unicode.IsSpace(r[j]) && !strings.ContainsRune("=!<>'\"", r[j]) {
				j++
			}
			out = append(out, string(r[i:j]))
			i = j
		}
	}
	return out, nil
}

// Eval evaluates c on the agents' outputs.
func (c *Cond) Eval(outputs map[string]any) bool {
	for _, and := range c.or {
		ok := true
		for _, x := range and {
			if !x.eval(outputs) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (x cmp) eval(outputs map[string]any) bool {
	obj, _ := outputs[x.agent].(map[string]any)
	v := obj[x.field]
	switch lit := x.lit.(type) {
	case float64:
		f, ok := v.(float64)
		if !ok {
			return false
		}
		switch x.op {
		case "==":
			return f == lit
		case "!=":
			return f != lit
		case "<":
			return f < lit
		case "<=":
			return f <= lit
		case ">":
			return f > lit
		}
		return f >= lit
	case bool:
		b, ok := v.(bool)
		return ok && (b == lit) == (x.op == "==")
	default:
		s, ok := v.(string)
		eq := ok && strings.EqualFold(strings.TrimSpace(s), strings.TrimSpace(lit.(string)))
		return eq == (x.op == "==")
	}
}
