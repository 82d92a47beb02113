package search

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Fallback returns a Provider that asks ps in order and answers with the
// first that succeeds, as seed 003's FallbackSearchProvider does: Tavily
// first, Brave when Tavily fails or runs out of time. An empty result is
// an answer, not a failure. When every provider fails, the error names
// each failure. Its name joins theirs with "+", such as "tavily+brave".
// With one provider, Fallback returns it.
func Fallback(ps ...Provider) Provider {
	if len(ps) == 1 {
		return ps[0]
	}
	return fallback(ps)
}

type fallback []Provider

func (f fallback) Name() string {
	names := make([]string, len(f))
	for i, p := range f {
		names[i] = p.Name()
	}
	return strings.Join(names, "+")
}

func (f fallback) Search(ctx context.Context, query string, max int) ([]Result, error) {
	var errs []error
	for _, p := range f {
		res, err := p.Search(ctx, query, max)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			// The caller gave up; the next provider would not be heard.
			return nil, err
		}
		errs = append(errs, fmt.Errorf("%s: %w", p.Name(), err))
	}
	return nil, errors.Join(errs...)
}
