package llm

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// RetryAfterHeader returns the delay a response's headers ask for:
// retry-after-ms (milliseconds), or else Retry-After (see ParseRetryAfter).
// It returns 0 when there is none.
func RetryAfterHeader(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	return ParseRetryAfter(h.Get("Retry-After"))
}

// ParseRetryAfter parses a Retry-After value: delay-seconds or an HTTP-date.
// It returns 0 when v is empty, malformed or in the past.
func ParseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// secretShapes match credentials that may appear in a provider's error text:
// OpenAI and Anthropic keys (sk-…), Google API keys (AIza…) and key URL
// parameters.
var secretShapes = []*regexp.Regexp{
	regexp.MustCompile(`\bsk-[A-Za-z0-9_*\-]{8,}`),
	regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{20,}`),
	regexp.MustCompile(`([?&](?:key|api_key)=)[^&\s"']+`),
}

// Redact removes each of secrets, and anything shaped like an API key, from
// s. Providers pass every error message through it, so that credentials never
// reach logs, errors or files.
func Redact(s string, secrets ...string) string {
	for _, k := range secrets {
		if k != "" {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	for _, re := range secretShapes {
		if re.NumSubexp() > 0 {
			s = re.ReplaceAllString(s, "${1}[redacted]")
		} else {
			s = re.ReplaceAllString(s, "[redacted]")
		}
	}
	return s
}
