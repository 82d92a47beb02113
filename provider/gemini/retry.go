package gemini

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// parseRetryAfter parses a Retry-After header value: delay-seconds or an
// HTTP-date. It returns 0 when v is empty or malformed.
func parseRetryAfter(v string) time.Duration {
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

// retryInfoDelay returns the retryDelay of a google.rpc.RetryInfo among an
// API error's details, or 0.
func retryInfoDelay(details []map[string]any) time.Duration {
	for _, d := range details {
		typ, _ := d["@type"].(string)
		if !strings.HasSuffix(typ, "google.rpc.RetryInfo") {
			continue
		}
		// The JSON form of a google.protobuf.Duration is "1.5s".
		s, _ := d["retryDelay"].(string)
		if dur, err := time.ParseDuration(s); err == nil && dur > 0 {
			return dur
		}
	}
	return 0
}

// keyParam matches an API key passed as a URL query parameter.
var keyParam = regexp.MustCompile(`([?&](?:key|api_key)=)[^&\s"']+`)

// redact removes key, and any key= URL parameter, from s.
func redact(s, key string) string {
	if key != "" {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	return keyParam.ReplaceAllString(s, "${1}[redacted]")
}
