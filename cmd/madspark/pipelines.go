package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/flow"
)

func (c *cli) pipelinesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pipelines",
		Short: "Work with pipelines defined in files",
	}
	check := &cobra.Command{
		Use:   "check FILE...",
		Short: "Validate pipeline files without running them",
		Long: `Validates each pipeline FILE and prints every problem found, one per line
as FILE:LINE: message; exits 2 if there is any.`,
		Args: cmdline.Args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, path := range args {
				p, err := flow.Load(path)
				var ps flow.Problems
				switch {
				case errors.As(err, &ps):
					bad += len(ps)
					for _, pr := range ps {
						fmt.Fprintln(c.stdout, pr)
					}
				case err != nil:
					return usageError{Err: err}
				default:
					fmt.Fprintf(c.stdout, "%s: ok: pipeline %s, %d agents\n", path, p.Name, len(p.Agents))
				}
			}
			switch {
			case bad == 1:
				return usagef("1 problem")
			case bad > 1:
				return usagef("%d problems", bad)
			}
			return nil
		},
	}
	cmd.AddCommand(check)
	return cmd
}
