package main

import (
	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
)

func (c *cli) mcpCmd() *cobra.Command {
	var (
		mc      app.MCPConfig
		noCache bool
	)
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the pipelines as MCP tools on standard input and output, for assistants and editors",
		Long: `Serves the Model Context Protocol on standard input and output, as MCP
clients (Claude Desktop, VS Code, command-line agents) start local servers.
Every pipeline is a tool of the same name (spark, chaos, debate, proposal,
assess, eval and the pipeline files of --pipelines): its arguments are the
pipeline's parameters, and it returns the result as structured content with
the run's ID (run_id) and the report in Markdown, telling the run's stages
as progress. A client's cancel stops the run; it stays resumable. Runs are
resources: madspark://runs/{id} (the run as JSON), and a succeeded run's
reports madspark://runs/{id}/export.md and madspark://runs/{id}/export.pdf.

Runs are recorded in the usual database (MADSPARK_DB or DATABASE_URL), so
"madspark runs", "madspark resume" and the web UI see them. Notices and logs
go to standard error; standard output carries the protocol only.

"madspark serve" serves the same at http://ADDR/mcp (Streamable HTTP).`,
		Args: cmdline.Args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := app.CheckMCP(mc); err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.open(ctx, noCache)
			if err != nil {
				return err
			}
			defer a.Close()
			return a.ServeMCP(ctx, mc, c.stdin, c.stdout)
		},
	}
	cmd.Flags().StringVar(&mc.PipelinesDir, "pipelines", "", "a directory of pipeline files (*.yaml, *.yml) to serve beside the built-in pipelines")
	cmd.Flags().DurationVar(&mc.Timeout, "timeout", app.DefaultMCPTimeout, "give up on a run after this long")
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	return cmd
}
