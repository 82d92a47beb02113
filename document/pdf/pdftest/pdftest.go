// Package pdftest checks rendered PDF files the way a reader sees them,
// with poppler-utils: pdftotext extracts their text and pdfinfo counts their
// pages. Without poppler the helpers skip the test, saying why, except
// when the CI environment variable is set, where they fail it (CI installs
// poppler-utils).
package pdftest

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Need skips or fails t when pdftotext or pdfinfo is missing.
func Need(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"pdftotext", "pdfinfo"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is missing in CI: .ci/run installs poppler-utils", tool)
			}
			t.Skipf("%s not installed (Debian: apt-get install poppler-utils); the PDF is not checked", tool)
		}
	}
}

// Pages returns the text of each page of the PDF at path, laid out as on
// the page.
func Pages(t testing.TB, path string) []string {
	t.Helper()
	Need(t)
	out, err := exec.Command("pdftotext", "-layout", "-enc", "UTF-8", path, "-").CombinedOutput()
	if err != nil {
		t.Fatalf("pdftotext: %v\n%s", err, out)
	}
	// pdftotext ends every page with a form feed.
	pages := strings.Split(string(out), "\f")
	if n := len(pages); n > 0 && strings.TrimSpace(pages[n-1]) == "" {
		pages = pages[:n-1]
	}
	return pages
}

// Text returns the text of the whole PDF at path with its white space
// collapsed, for searching phrases that wrap across lines.
func Text(t testing.TB, path string) string {
	t.Helper()
	return Flat(strings.Join(Pages(t, path), " "))
}

// Flat collapses white space.
func Flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// PageCount returns the page count pdfinfo reports.
func PageCount(t testing.TB, path string) int {
	t.Helper()
	Need(t)
	out, err := exec.Command("pdfinfo", path).CombinedOutput()
	if err != nil {
		t.Fatalf("pdfinfo: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^Pages:\s+(\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("pdfinfo gave no page count:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
