package assess

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// MaxSlugLen caps the length of a slug.
const MaxSlugLen = 50

// reserved are names some file systems refuse whatever the extension.
var reserved = map[string]bool{"con": true, "prn": true, "aux": true, "nul": true,
	"com1": true, "com2": true, "com3": true, "com4": true, "com5": true, "com6": true, "com7": true, "com8": true, "com9": true,
	"lpt1": true, "lpt2": true, "lpt3": true, "lpt4": true, "lpt5": true, "lpt6": true, "lpt7": true, "lpt8": true, "lpt9": true}

// Slug turns an idea into a file-system-safe directory name: lower-case
// ASCII letters, digits and single hyphens, at most MaxSlugLen characters,
// never empty, never "." or "..". Accents are folded ("Café" → "cafe").
// Letters with no ASCII form (Cyrillic, CJK, …) cannot be spelled, so a
// short hash of the idea is appended to keep such ideas apart; an idea with
// nothing left becomes "idea-<hash>".
func Slug(idea string) string {
	folded, _, err := transform.String(transform.Chain(norm.NFKD, runes.Remove(runes.In(unicode.Mn)), norm.NFC), idea)
	if err != nil {
		folded = idea
	}
	var b strings.Builder
	dropped, hyphen := false, false
	for _, r := range strings.ToLower(folded) {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			hyphen = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			dropped, hyphen = true, true
		default:
			hyphen = true
		}
	}
	sum := sha256.Sum256([]byte(idea))
	tag := hex.EncodeToString(sum[:])[:8]
	s := b.String()
	limit := MaxSlugLen
	if dropped || s == "" {
		limit -= len(tag) + 1
	}
	s = cut(s, limit)
	switch {
	case s == "":
		return "idea-" + tag
	case dropped:
		return s + "-" + tag
	case reserved[s]:
		return s + "-idea"
	}
	return s
}

// cut shortens s to at most n bytes, at a hyphen when one is in the second
// half, and never ending with a hyphen.
func cut(s string, n int) string {
	if len(s) > n {
		s = s[:n]
		if i := strings.LastIndexByte(s, '-'); i > n/2 {
			s = s[:i]
		}
	}
	return strings.Trim(s, "-")
}
