package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// needNode prepares a test that runs a node script of the repository:
// it returns node, the script's directory (rel, from the repository's
// root) made absolute, and missing, which skips the test saying why, or
// fails it in CI (CI set), where every such test must run. The test is
// skipped with -short, and missing is called when node or one of pkgs in
// the directory's node_modules is not there.
func needNode(t *testing.T, what, rel string, pkgs ...string) (node, dir string, missing func(why string)) {
	t.Helper()
	if testing.Short() {
		t.Skipf("the %s is not short", what)
	}
	missing = func(why string) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must run the %s, but %s", what, why)
		}
		t.Skipf("skipping the %s: %s", what, why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	dir, err = filepath.Abs(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			missing(filepath.ToSlash(filepath.Join(rel, "node_modules")) + " has no " + pkg + ": run `npm ci` in " + rel)
		}
	}
	return node, dir, missing
}
