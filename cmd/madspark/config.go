package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/joho/godotenv"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/madspark/madspark/config"
)

// versionString is the version, the commit it was built from (when the
// build recorded one) and the Go version.
func versionString() string {
	commit := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				commit = s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("madspark %s (commit %s, %s)", version, commit, runtime.Version())
}

func (c *cli) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  argsError(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(c.stdout, versionString())
			return nil
		},
	}
}

func (c *cli) configCmd() *cobra.Command {
	var show, noCheck bool
	var format string
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Set up a provider in .env, or show the configuration in effect",
		Long: `madspark config asks for the provider, its key (not echoed) and the
model, checks them with one short request, and writes them to .env in the
working directory (mode 0600), keeping what else the file holds.

madspark config --show prints the settings in effect, where each comes from,
and keys masked.`,
		Args: argsError(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			if show {
				return c.showConfig(format)
			}
			return c.setUp(cmd, noCheck)
		},
	}
	cmd.Flags().BoolVar(&show, "show", false, "print the settings in effect, keys masked")
	cmd.Flags().BoolVar(&noCheck, "no-check", false, "write the settings without sending the check request")
	cmd.Flags().StringVar(&format, "output-format", "text", "text or json (with --show)")
	return cmd
}

func (c *cli) showConfig(format string) error {
	file := config.DefaultFile()
	vars, _ := godotenv.Read(file)
	// c.env reads the environment, then the file.
	lookup := func(k string) (string, bool) {
		v := c.env(k)
		return v, v != "" && v != vars[k]
	}
	entries := config.Show(lookup, ".env", vars)
	if format == "json" {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"settings": entries})
	}
	if len(entries) == 0 {
		fmt.Fprintln(c.stdout, "No settings: madspark runs in mock mode. Run madspark config to set up a provider.")
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tVALUE\tFROM")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, e.Value, e.Source)
	}
	return tw.Flush()
}

// setUp asks the questions, checks the answers and saves them.
func (c *cli) setUp(cmd *cobra.Command, noCheck bool) error {
	in := bufio.NewReader(c.stdin)
	ask := func(question, def string, secret bool) (string, error) {
		if def != "" {
			fmt.Fprintf(c.stderr, "%s [%s]: ", question, def)
		} else {
			fmt.Fprintf(c.stderr, "%s: ", question)
		}
		var line string
		if f, ok := c.stdin.(*os.File); ok && secret && term.IsTerminal(int(f.Fd())) {
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(c.stderr)
			if err != nil {
				return "", fmt.Errorf("read %s: %w", strings.ToLower(question), err)
			}
			line = string(b)
		} else {
			s, err := in.ReadString('\n')
			if err != nil && (err != io.EOF || s == "") {
				return "", usagef("no answer to %q", question)
			}
			line = s
		}
		if line = strings.TrimSpace(line); line == "" {
			return def, nil
		}
		return line, nil
	}
	name, err := ask("Provider (openai, anthropic, gemini, ollama)", "openai", false)
	if err != nil {
		return err
	}
	values := map[string]string{"MADSPARK_PROVIDER": strings.ToLower(name)}
	var keyVar, defModel string
	switch values["MADSPARK_PROVIDER"] {
	case "openai":
		keyVar, defModel = "OPENAI_API_KEY", "gpt-4o-mini"
		base, err := ask("Base URL of an OpenAI-compatible server (empty for OpenAI)", "", false)
		if err != nil {
			return err
		}
		values["OPENAI_BASE_URL"] = base
	case "anthropic":
		keyVar, defModel = "ANTHROPIC_API_KEY", "claude-sonnet-4-6"
	case "gemini":
		keyVar, defModel = "GOOGLE_API_KEY", "gemini-2.5-flash"
	case "ollama":
		defModel = "llama3.2"
		host, err := ask("Ollama address", "127.0.0.1:11434", false)
		if err != nil {
			return err
		}
		values["OLLAMA_HOST"] = host
	default:
		return usagef("unknown provider %q: choose openai, anthropic, gemini or ollama", name)
	}
	if keyVar != "" {
		optional := values["OPENAI_BASE_URL"] != ""
		q := "API key"
		if optional {
			q = "API key (empty for none)"
		}
		key, err := ask(q, "", true)
		if err != nil {
			return err
		}
		if key == "" && !optional {
			return usagef("an API key is required for %s", name)
		}
		values[keyVar] = key
	}
	if values["MADSPARK_MODEL"], err = ask("Model", defModel, false); err != nil {
		return err
	}
	if !noCheck {
		fmt.Fprintf(c.stderr, "Checking %s with one short request…\n", name)
		getenv := func(k string) string {
			if v, ok := values[k]; ok {
				return v
			}
			if k == "MADSPARK_MODE" {
				return "live"
			}
			return ""
		}
		if _, err := config.Check(cmd.Context(), getenv); err != nil {
			return fmt.Errorf("the check failed, nothing was written: %w", err)
		}
	}
	file := config.DefaultFile()
	if err := config.Save(file, values); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Saved %s (mode 0600): provider %s, model %s.\n", file, values["MADSPARK_PROVIDER"], values["MADSPARK_MODEL"])
	return nil
}
