package assess

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvaluationsStayInTheirDirectory: an evaluation file that is a link
// out of the output directory is skipped with the reason, never read
// into the synthesis.
func TestEvaluationsStayInTheirDirectory(t *testing.T) {
	top := t.TempDir()
	secret := filepath.Join(top, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"idea": "SECRET", "grades": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "out")
	slug := filepath.Join(dir, analysesDir, "linked")
	if err := os.MkdirAll(slug, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(slug, evalFile)); err != nil {
		t.Fatal(err)
	}
	ranked, skipped, err := LoadEvaluations(dir)
	if err != nil || len(ranked) != 0 || len(skipped) != 1 || !strings.Contains(skipped[0].Reason, "leads out of its directory") {
		t.Fatalf("ranked %+v, skipped %+v, %v", ranked, skipped, err)
	}
}
