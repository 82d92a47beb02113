package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOneOutputsDirectory: every command that writes files writes them
// under one outputs directory unless told another — assess (its
// analyses/, logs/ and the synthesis's reports/ under assess/), chaos and
// proposal (a run_… directory each) and a PDF export — and nothing into
// the working directory. MADSPARK_OUTPUT_DIR moves it.
func TestOneOutputsDirectory(t *testing.T) {
	for _, tt := range []struct {
		name    string
		outputs string // MADSPARK_OUTPUT_DIR; "" for the default
	}{{"default", ""}, {"MADSPARK_OUTPUT_DIR", filepath.Join(t.TempDir(), "elsewhere")}} {
		t.Run(tt.name, func(t *testing.T) {
			wd := t.TempDir()
			t.Chdir(wd)
			env := mockEnv(t)
			env["MADSPARK_OUTPUT_DIR"] = tt.outputs
			root := tt.outputs
			if root == "" {
				root = filepath.Join(wd, "outputs")
			}
			idea := "A subscription service for refurbished lab equipment"
			for _, args := range [][]string{
				{"assess", idea, "--judge", "--min-words", "100"},
				{"assess", "synthesize"},
				{"chaos", "new ways to reduce food waste", "--iterations", "1"},
				{"proposal", "--profile", writeProfile(t, "me.yaml", tightProfile)},
			} {
				if r := invoke(t, env, args...); r.code != 0 {
					t.Fatalf("%q: exit %d: %s", args, r.code, r.stderr)
				}
			}
			for _, pattern := range []string{
				"assess/analyses/*/analysis.md", "assess/analyses/*/evaluation.json", "assess/logs/runs/*/run_summary.json",
				"assess/reports/synthesis.md", "run_*/final_output.txt", "run_*/proposal.pdf",
			} {
				if m, _ := filepath.Glob(filepath.Join(root, pattern)); len(m) == 0 {
					t.Errorf("nothing at %s under %s", pattern, root)
				}
			}
			entries, err := os.ReadDir(wd)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if tt.outputs != "" || e.Name() != "outputs" {
					t.Errorf("%s was written into the working directory", e.Name())
				}
			}
		})
	}
}
