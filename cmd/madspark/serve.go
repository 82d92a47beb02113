package main

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
)

func (c *cli) serveCmd() *cobra.Command {
	f := &debateFlags{}
	var (
		sc      app.ServeConfig
		noCache bool
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the web UI, the REST API of runs and bookmarks, OpenAI-compatible chat completions and MCP",
		Long: `Serves the web UI at http://ADDR/, the REST API at http://ADDR/api (runs
of every pipeline, their live progress over SSE and WebSocket, exports,
bookmarks; its OpenAPI document is /api/openapi.json), an OpenAI-compatible
API at http://ADDR/v1 (GET /v1/models, POST /v1/chat/completions and POST
/v1/responses, streaming included), MCP at http://ADDR/mcp (Streamable HTTP;
see madspark mcp), GET /health, GET /health/detailed and GET /metrics.

Pages of other sites cannot use it: a state-changing request, or a
progress stream (SSE or WebSocket), from a page of another origin (scheme,
host and port compared) is refused (403), as is a body that is not
application/json (415), and, without a token, a request for a host name
other than the bound address, localhost or a loopback address (421, so
that DNS rebinding cannot read it). --allowed-origins (or
MADSPARK_CORS_ORIGINS; comma-separated scheme://host[:port]) lets other
sites' pages call it, for a web UI served elsewhere; --allowed-hosts (or
MADSPARK_ALLOWED_HOSTS; comma-separated names) adds host names it answers
to. MADSPARK_RATE_LIMIT (requests per second per client, default 20, "off"
for none) and MADSPARK_RATE_BURST (default 120) bound each client of /api,
/v1 and /mcp.

Binds 127.0.0.1:8080 by default. Binding any other address requires
MADSPARK_API_TOKEN of at least 32 characters (openssl rand -hex 16 makes
one); every request then needs "Authorization: Bearer TOKEN". A request
without it gets 401; after 10 wrong tokens from one address, that address
gets 429 for a while (one more try every 6 s).

A broken file in --pipelines is logged and listed by GET /api/pipelines
(and the web UI) with its problems; the other files are served.

Unless --no-worker, the server also works queued runs as madspark worker
does (--max-concurrent, --lease, --drain-timeout), resuming at start the
runs it was working when it stopped; on Ctrl-C it drains them after the
HTTP server.`,
		Args: cmdline.Args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			sc.Debate = f.Settings
			if err := app.CheckServe(c.env, sc); err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.openWith(ctx, app.Config{NoCache: noCache, ModelPath: f.modelPath, HFRepo: f.hfRepo})
			if err != nil {
				return err
			}
			defer a.Close()
			var start time.Time // when the server started listening
			sc.Ready = func(addr net.Addr, models []string) {
				start = time.Now()
				fmt.Fprintf(c.stderr, "madspark: serving http://%s/v1 (models %s; provider %s/%s, %s) and the REST API at http://%s/api\n"+
					"madspark: web UI at http://%s/ and MCP at http://%s/mcp (Ctrl-C stops the server)\n",
					addr, strings.Join(models, ", "), a.Info.Name, a.Info.Model, a.Info.Mode(), addr, addr, addr)
			}
			err = a.Serve(ctx, sc)
			if !start.IsZero() {
				fmt.Fprintf(c.stderr, "madspark: server stopped after %s\n", time.Since(start).Round(time.Second))
			}
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&sc.Addr, "addr", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "do not use the response cache")
	cmd.Flags().BoolVar(&sc.NoWorker, "no-worker", false, "do not work queued runs in this process (madspark worker processes do)")
	cmd.Flags().StringVar(&sc.AllowedOrigins, "allowed-origins", "", "comma-separated origins (scheme://host[:port]) whose pages may call the server (default $MADSPARK_CORS_ORIGINS)")
	cmd.Flags().StringVar(&sc.AllowedHosts, "allowed-hosts", "", "comma-separated host names the server answers to besides its address and localhost (default $MADSPARK_ALLOWED_HOSTS)")
	cmd.Flags().StringVar(&sc.PipelinesDir, "pipelines", "", "a directory of pipeline files (*.yaml, *.yml) to serve beside the built-in pipelines; a broken one is listed, not served")
	registerWorker(cmd, &sc.Worker)
	f.Mode = "auto"
	return cmd
}
