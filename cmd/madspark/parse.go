package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/structured"
)

func (c *cli) parseCmd() *cobra.Command {
	var (
		schema, agentName, dir, format string
		list                           bool
	)
	cmd := &cobra.Command{
		Use:   "parse (--schema SCHEMA.json | --agent NAME) [REPLY_FILE|-]",
		Short: "Read a model's reply against a schema, as the pipelines do",
		Long: `Reads a model's reply (from REPLY_FILE, or standard input) against a JSON
Schema (--schema) or a built-in agent's (--agent; --agents lists them) the
way every pipeline reads its replies: the JSON repaired, then aligned to
the schema, each alignment a repair. Prints the value; with
--output-format json, {"value": ..., "repairs": [...], "usable": true}.
Exits 0 when the reply is usable, repaired or not, and 2 with the reason
when nothing in it can become a value of the schema.`,
		Args: cmdline.Args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckFormat(format, "text", "json"); err != nil {
				return err
			}
			if list {
				if schema != "" || agentName != "" || len(args) > 0 {
					return usagef("--agents lists the agents: give it alone (with --pipelines DIR to add a directory's pipeline files)")
				}
				return c.listAgents(dir, format)
			}
			r, err := app.ReplyReader(schema, agentName, dir)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			reply, err := c.readReply(ctx, args)
			if err != nil {
				return err
			}
			p := r.Parse(ctx, string(reply))
			if err := ctx.Err(); err != nil {
				// Stopped by a signal: nothing was read.
				return err
			}
			return c.printParsed(p, format)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&schema, "schema", "", "a JSON Schema file to read the reply against")
	fs.StringVar(&agentName, "agent", "", "a built-in agent whose schema to read the reply against, such as spark.evaluate")
	fs.BoolVar(&list, "agents", false, "list the agents whose replies are JSON, with their schemas' names")
	fs.StringVar(&dir, "pipelines", "", "a directory of pipeline files whose agents --agent and --agents know too")
	fs.StringVar(&format, "output-format", "text", "what to print: text (the value) or json (value, repairs, usable)")
	return cmd
}

// readReply reads the reply from the file args names, or standard input
// for none or "-". Waiting for it (a terminal, a pipe, a FIFO) ends when
// ctx is done.
func (c *cli) readReply(ctx context.Context, args []string) ([]byte, error) {
	open := func() (io.ReadCloser, error) { return io.NopCloser(c.stdin), nil }
	name := "the reply"
	if len(args) > 0 && args[0] != "-" {
		st, err := os.Stat(args[0])
		if err != nil {
			return nil, usagef("reply file: %v", err)
		}
		if st.Size() > maxReply {
			return nil, usagef("reply file %s is over %d MiB", args[0], maxReply>>20)
		}
		open = func() (io.ReadCloser, error) { return os.Open(args[0]) }
		name = "reply file " + args[0]
	}
	type read struct {
		data []byte
		err  error
	}
	got := make(chan read, 1)
	go func() {
		// Opening a FIFO waits for its writer, too.
		f, err := open()
		if err != nil {
			got <- read{nil, err}
			return
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxReply+1))
		got <- read{data, err}
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-got:
		if r.err != nil {
			return nil, usagef("reading %s: %v", name, r.err)
		}
		if len(r.data) > maxReply {
			return nil, usagef("%s is over %d MiB", name, maxReply>>20)
		}
		return r.data, nil
	}
}

// maxReply bounds a reply read by parse.
const maxReply = 16 << 20

// printParsed prints what a reply read as, and fails with its reason
// when it is not usable.
func (c *cli) printParsed(p structured.Parsed, format string) error {
	if format == "json" {
		out := struct {
			Value   json.RawMessage     `json:"value"`
			Repairs []structured.Repair `json:"repairs"`
			Usable  bool                `json:"usable"`
			Asks    []string            `json:"asks,omitempty"`
			Problem string              `json:"problem,omitempty"`
		}{p.Value, p.Repairs, p.Usable, p.Asks, p.Problem}
		if out.Value == nil {
			out.Value = json.RawMessage("null")
		}
		if err := writeJSON(c, out); err != nil {
			return err
		}
	} else if p.Usable {
		var v any
		_ = json.Unmarshal(p.Value, &v)
		if err := writeJSON(c, v); err != nil {
			return err
		}
		for _, r := range p.Repairs {
			where := r.Path
			if where == "" {
				where = "(the reply)"
			}
			fmt.Fprintf(c.stderr, "repair: %s %s: %s\n", r.Rule, where, r.Action)
		}
		for _, a := range p.Asks {
			fmt.Fprintf(c.stderr, "would ask again: %s\n", a)
		}
	}
	if !p.Usable {
		return usagef("the reply cannot be read as a value of the schema: %s", p.Problem)
	}
	return nil
}

// listAgents prints the agents whose replies are JSON.
func (c *cli) listAgents(dir, format string) error {
	agents, err := app.Agents(dir)
	if err != nil {
		return err
	}
	app.SortAgents(agents)
	if format == "json" {
		type row struct {
			Agent  string          `json:"agent"`
			Schema string          `json:"schema"`
			JSON   json.RawMessage `json:"json_schema"`
		}
		rows := make([]row, len(agents))
		for i, a := range agents {
			rows[i] = row{a.Name, a.Spec.Name(), a.Spec.Schema().JSON}
		}
		return writeJSON(c, rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSCHEMA\tREPLY")
	for _, a := range agents {
		hint := a.Spec.Schema().Hint
		if len([]rune(hint)) > 70 {
			hint = string([]rune(hint)[:69]) + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", a.Name, a.Spec.Name(), hint)
	}
	return tw.Flush()
}
