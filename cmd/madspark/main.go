// Command madspark runs multi-agent LLM pipelines.
//
//	madspark "sustainable urban farming" "low-cost, scalable solutions"
//	madspark spark "AI in education" "accessible to all" --enhanced-reasoning
//	madspark runs list
//
// See the README for providers and flags.
package main

import (
	"context"
	"os"

	"github.com/madspark/madspark/cmdline"
)

func main() {
	ctx, stop := cmdline.NotifyContext(context.Background())
	code := run(ctx, os.Args[1:], osEnv(), os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
