package structured

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// keyOf normalises a key for matching: lower case, letters and digits
// only, so that "Confidence_score", "confidenceScore", "confidence-score"
// and "confidence score" are one key.
func keyOf(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// related reports whether normalised keys a and b name the same thing in
// more or fewer words: one contains the other and is not much shorter
// ("confidence" and "confidencescore", "accepted" and "acceptedideas").
func related(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 4 && len(a)*5 >= len(b)*2 && strings.Contains(b, a)
}

// undecorated strips what models wrap a short value in: Markdown
// emphasis and code marks, quotes, and surrounding spaces.
func undecorated(s string) string {
	return strings.TrimSpace(strings.Trim(strings.TrimSpace(s), "*_`~\"'“”‘’"))
}

// words splits s into lower-case words of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// noValue reports whether a text is a placeholder, which says there is no
// value: "", "null", "none", "n/a", "TBD", "unknown", "-".
func noValue(s string) bool {
	switch strings.ToLower(strings.TrimRight(undecorated(s), ".")) {
	case "", "null", "none", "nil", "n/a", "na", "n.a", "unknown", "-", "—", "–", "--", "?", "…", "..",
		"not given", "not applicable", "not available", "not specified", "tbd", "tba", "to be determined",
		"to be decided", "undefined", "empty", "no value", "pending", "placeholder":
		return true
	}
	return false
}

var (
	// numberRE is a number as models write it: "7", "-0.5", ".5",
	// "1,200", "1,200.5".
	numberRE = `[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)`
	// ratioRE is "8/10", "8.5 out of 10", "4 of 5".
	ratioRE = regexp.MustCompile(`^(` + numberRE + `)\s*(?:/|out\s+of|of)\s*(` + numberRE + `)`)
	// leadNumberRE is a number at the start of a text, with a percent
	// sign or word after it.
	leadNumberRE = regexp.MustCompile(`^(` + numberRE + `)\s*(%|percent\b)?`)
	// labelRE is a label before a value: "Score:", "approx.", "~".
	labelRE = regexp.MustCompile(`^(?:[a-z][a-z ]{0,20}:|~|≈|approx\.?|approximately|about|around|roughly|circa)\s*`)
)

// pointRE is the decimals of a number in words: " point five", " point
// two five".
var pointRE = regexp.MustCompile(`^\s+point((?:\s+(?:zero|one|two|three|four|five|six|seven|eight|nine))+)\b`)

// scaleRE is a number and the word or sign of a scale after it.
var scaleRE = regexp.MustCompile(`^` + numberRE + `\s*(?:/|out\s+of|of)\s*`)

// letterRE is a one-letter answer: "B", "B+", "A)", "answer A", "Grade:
// D", "B (with minor reservations)".
var letterRE = regexp.MustCompile(`(?i)^\s*(?:(?:answer|option|grade|choice|response|winner|verdict)\s*[:=-]?\s*)?([a-z])(?:\s*[-+)\]:.–—,!(]|\s*$)`)

var numberWords = map[string]float64{
	"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
	"fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
	"nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
	"seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
}

// numberWordsRE finds number words at the start of a text: "seven",
// "twenty five", "twenty-five".
var numberWordsRE = regexp.MustCompile(`^((?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred)(?:[\s-]+(?:one|two|three|four|five|six|seven|eight|nine))?)\b`)

// spelled turns number words at the start of s into digits: "seven out
// of ten" → "7 out of 10".
func spelled(s string) string {
	replace := func(text string) (string, bool) {
		m := numberWordsRE.FindStringSubmatch(text)
		if m == nil {
			return text, false
		}
		var total float64
		for _, w := range strings.FieldsFunc(m[1], func(r rune) bool { return r == ' ' || r == '-' || r == '\t' }) {
			total += numberWords[w]
		}
		out := strconv.FormatFloat(total, 'g', -1, 64)
		rest := text[len(m[0]):]
		// "eight point five": the digits after the point, one word each.
		if d := pointRE.FindStringSubmatch(rest); d != nil {
			out += "."
			for _, w := range strings.Fields(d[1]) {
				out += strconv.Itoa(int(numberWords[w]))
			}
			rest = rest[len(d[0]):]
		}
		return out + rest, true
	}
	out, ok := replace(s)
	if !ok {
		return s
	}
	// A second number after "out of" or "/".
	if m := scaleRE.FindString(out); m != "" {
		if rest, ok := replace(out[len(m):]); ok {
			out = m + rest
		}
	}
	return out
}

// parseNumber reads a number a model wrote as text, for a field with the
// range [min, max] (either may be nil): "7", "7.5 ", "1,200", "8/10" and
// "8.5 out of 10" (scaled when the field's scale is another: "4/5" is 8
// on 0-10), "85%" (0.85 where the field lies in 0-1), "7 points",
// "seven", "Score: 7". A text with a second number that is not a scale
// ("5-7", "7 or 8") is not read: it holds no one value.
func parseNumber(s string, min, max *float64) (float64, bool) {
	t := strings.ToLower(undecorated(s))
	t = labelRE.ReplaceAllString(t, "")
	t = fractions(spelled(fractions(strings.TrimSpace(t))))
	if m := decimalCommaRE.FindStringSubmatch(t); m != nil {
		// "7,5": a decimal comma (a group of thousands has three digits).
		t = m[1] + "." + m[2]
	}
	if m := ratioRE.FindStringSubmatch(t); m != nil {
		n, ok1 := atof(m[1])
		d, ok2 := atof(m[2])
		if !ok1 || !ok2 || d <= 0 || holdsNumber(t[len(m[0]):]) {
			return 0, false
		}
		if max != nil && (min == nil || *min == 0) && d != *max {
			return n / d * *max, true
		}
		return n, true
	}
	if n, ok := json5Number(t); ok && t != "" {
		// .85, +7.5, 0x1F
		return atof(n)
	}
	m := leadNumberRE.FindStringSubmatch(t)
	if m == nil {
		return soleNumber(t)
	}
	rest := t[len(m[0]):]
	if holdsNumber(rest) || multiplierRE.MatchString(rest) {
		return 0, false
	}
	f, ok := atof(m[1])
	if !ok {
		return 0, false
	}
	if m[2] != "" && max != nil && *max <= 1 {
		f /= 100
	}
	return f, true
}

// soleNumberRE finds the numbers of a text: digits with groups of
// thousands and decimals, a leading point, hexadecimal after 0x.
var soleNumberRE = regexp.MustCompile(`[-+]?(?:0x[0-9a-f]+|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)`)

// multiplierRE is a word or sign after a number that scales it: "1.2k",
// "3 million", "2bn"; such a number is not read.
var multiplierRE = regexp.MustCompile(`^\s*(?:k|m|mm|b|bn|mn|thousand|million|billion|trillion|hundred|lakh|crore)\b`)

// soleNumber reads a text that holds exactly one number among words, a
// unit or an ordinal ("#2", "2nd", "rank 3", "$1,200", "USD 500"): that
// number. A text with a second number, a number in words beside it, or a
// multiplier after it is not read.
func soleNumber(t string) (float64, bool) {
	locs := soleNumberRE.FindAllStringIndex(t, 2)
	if len(locs) != 1 {
		return 0, false
	}
	rest := t[:locs[0][0]] + " " + t[locs[0][1]:]
	if holdsNumber(rest) || multiplierRE.MatchString(t[locs[0][1]:]) {
		return 0, false
	}
	// A letter or digit run into the number's start ("Q3", "v2") is a
	// name, not a number.
	if i := locs[0][0]; i > 0 && isWordByte(t[i-1]) {
		return 0, false
	}
	w := t[locs[0][0]:locs[0][1]]
	if n, ok := json5Number(w); ok {
		return atof(n)
	}
	return atof(w)
}

func isWordByte(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

func atof(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimPrefix(s, "+"), ",", ""), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// holdsNumber reports whether the rest of a text after its number holds
// another, in digits or in words, so that the text is not one number.
func holdsNumber(rest string) bool {
	if strings.IndexFunc(rest, func(r rune) bool { return unicode.IsDigit(r) || strings.ContainsRune("½¼¾⅓⅔", r) }) >= 0 {
		return true
	}
	for _, w := range words(rest) {
		if _, ok := numberWords[w]; ok || w == "half" || w == "quarter" || w == "quarters" || w == "point" || w == "third" || w == "thirds" {
			return true
		}
	}
	return false
}

// decimalCommaRE is a number written with a decimal comma: "7,5".
var decimalCommaRE = regexp.MustCompile(`^([-+]?\d+),(\d{1,2})(\D|$)`)

// fractionRE is a half or a quarter after a number: "7½", "7 ½", "7 and
// a half", "7 and three quarters".
var fractionRE = regexp.MustCompile(`^(\d+)\s*(?:(½)|(¼)|(¾)|and\s+(?:a|one)\s+(half)|and\s+(?:a|one)\s+(quarter)|and\s+three\s+(quarters))`)

// fractions writes a half or a quarter after a number as decimals.
func fractions(t string) string {
	m := fractionRE.FindStringSubmatchIndex(t)
	if m == nil {
		return t
	}
	var frac string
	switch {
	case m[4] >= 0, m[10] >= 0:
		frac = ".5"
	case m[6] >= 0, m[12] >= 0:
		frac = ".25"
	default:
		frac = ".75"
	}
	return t[m[2]:m[3]] + frac + t[m[1]:]
}

// parseBool reads yes/no, true/false, y/n, on/off and 1/0, decorated or
// not.
func parseBool(s string) (bool, bool) {
	w := words(s)
	if len(w) == 0 {
		return false, false
	}
	// The first word decides ("yes, it is ready"), unless another of
	// the words says the opposite.
	var value bool
	switch w[0] {
	case "true", "yes", "y", "on", "1":
		value = true
	case "false", "no", "n", "off", "0":
	default:
		return false, false
	}
	for _, x := range w[1:] {
		switch x {
		case "true", "yes", "false", "no", "not":
			return false, false
		}
	}
	return value, true
}

// bulletRE is the marker of a list item at the start of a line: "- ",
// "* ", "• ", "1. ", "2) ", "(3) ", "a) ".
var bulletRE = regexp.MustCompile(`^\s*(?:[-*•‣◦▪·–—+]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z][.)])\s+`)

// splitBullets splits a text of bullet or numbered lines into its items:
// a line without a marker continues the item before it; lines before the
// first item are a heading, returned apart. ok is false when the text is
// not such a list: no line starts with a marker, or one does after a line
// that is not a heading (ending with a colon).
func splitBullets(s string) (items []string, heading string, ok bool) {
	var head []string
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if m := bulletRE.FindString(line); m != "" {
			items = append(items, strings.TrimSpace(line[len(m):]))
			continue
		}
		if len(items) == 0 {
			head = append(head, strings.TrimSpace(line))
			continue
		}
		items[len(items)-1] += " " + strings.TrimSpace(line)
	}
	heading = strings.Join(head, " ")
	if len(items) == 0 || (heading != "" && len(items) < 2 && !strings.HasSuffix(heading, ":")) {
		return nil, "", false
	}
	return items, heading, true
}

// matchEnum maps text onto one of values: the same after case, spaces and
// punctuation; a synonym (from → to); else the one value the text starts
// with, or the one it names (not after "not" or "no"), when exactly one
// does. A value of one letter (a grade, an answer "A") matches only the
// text that is that letter, with a sign or a closing mark after it
// ("B+", "A)"), or after "answer", "option", "grade" or "choice".
func matchEnum(text string, values []string, synonyms map[string]string) (string, bool) {
	k := keyOf(text)
	for _, v := range values {
		if keyOf(v) == k {
			return v, true
		}
	}
	for from, to := range synonyms {
		if keyOf(from) == k {
			for _, v := range values {
				if v == to {
					return v, true
				}
			}
		}
	}
	w := words(text)
	if len(w) == 0 {
		return "", false
	}
	type form struct {
		words  []string
		target string
	}
	var forms []form
	for _, v := range values {
		forms = append(forms, form{words(v), v})
	}
	for from, to := range synonyms {
		for _, v := range values {
			if v == to {
				forms = append(forms, form{words(from), v})
			}
		}
	}
	if m := letterRE.FindStringSubmatch(undecorated(text)); m != nil {
		for _, v := range values {
			if len([]rune(v)) == 1 && strings.EqualFold(v, m[1]) {
				return v, true
			}
		}
	}
	// The value the text starts with.
	var lead []string
	for _, f := range forms {
		if len(f.words) == 0 || len([]rune(f.target)) == 1 || len(f.words) > len(w) {
			continue
		}
		if equalWords(w[:len(f.words)], f.words) {
			lead = append(lead, f.target)
		}
	}
	if v, ok := unique(lead); ok {
		return v, true
	}
	// The value the text names, the longest where one name holds another
	// ("partially aligned" holds "aligned").
	type hit struct {
		at, n  int
		target string
	}
	var hits []hit
	for _, f := range forms {
		if len(f.words) == 0 || len([]rune(f.target)) == 1 {
			continue
		}
		for i := 0; i+len(f.words) <= len(w); i++ {
			if !equalWords(w[i:i+len(f.words)], f.words) {
				continue
			}
			if i > 0 && negation[w[i-1]] {
				continue
			}
			hits = append(hits, hit{i, len(f.words), f.target})
		}
	}
	var named []string
	for _, h := range hits {
		inner := false
		for _, o := range hits {
			if o.n > h.n && o.at <= h.at && h.at+h.n <= o.at+o.n {
				inner = true
			}
		}
		if !inner {
			named = append(named, h.target)
		}
	}
	return unique(named)
}

var negation = map[string]bool{"not": true, "no": true, "never": true, "dont": true, "don": true, "without": true, "cannot": true, "nor": true}

func equalWords(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// unique returns the one distinct string of list.
func unique(list []string) (string, bool) {
	if len(list) == 0 {
		return "", false
	}
	for _, s := range list[1:] {
		if s != list[0] {
			return "", false
		}
	}
	return list[0], true
}
