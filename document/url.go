package document

import (
	"net/url"
	"strings"
)

// LinkURL returns u without the white space around it when a document may
// link to it: an absolute http or https URL with a host, or a mailto URL
// with an address. Anything else — javascript:, data:, file:, relative
// or malformed URLs, URLs with control characters — gives "", and
// renderers show the link's text without a link.
func LinkURL(u string) string {
	u = strings.TrimSpace(u)
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	switch strings.ToLower(p.Scheme) {
	case "http", "https":
		if p.Host == "" || p.Opaque != "" {
			return ""
		}
	case "mailto":
		if p.Opaque == "" || strings.HasPrefix(p.Opaque, "/") {
			return ""
		}
	default:
		return ""
	}
	return u
}
