package gemini

import (
	"strings"
	"time"
)

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
