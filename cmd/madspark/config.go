package main

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/joho/godotenv"
	"github.com/spf13/cobra"

	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/cmdline"
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
	return fmt.Sprintf("madspark %s (commit %s, %s)", app.Version, commit, runtime.Version())
}

func (c *cli) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version",
		Args:  cmdline.Args(cobra.NoArgs),
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

madspark config --show prints the settings, where each comes from, and keys
masked; then what they put in effect: the provider, its model, the base URL
its requests go to and how replies' schemas reach the model (structured
output), each with why.`,
		Args: cmdline.Args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cmdline.CheckFormat(format, "text", "json"); err != nil {
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
	effect, err := config.InEffect(c.env)
	if err != nil {
		// The settings are shown, so that the one at fault can be found.
		if format == "json" {
			_ = writeJSON(c, map[string]any{"settings": entries})
		} else {
			_ = config.WriteTable(c.stdout, entries)
		}
		return usageError{Err: fmt.Errorf("no provider is in effect: %w", err)}
	}
	if format == "json" {
		return writeJSON(c, map[string]any{"settings": entries, "in_effect": effect})
	}
	if err := config.WriteTable(c.stdout, entries); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout)
	return config.WriteInEffect(c.stdout, effect)
}

// setUp asks the questions, checks the answers and saves them.
func (c *cli) setUp(cmd *cobra.Command, noCheck bool) error {
	file := config.DefaultFile()
	values, err := config.SetUp(cmd.Context(), config.Prompter(c.stdin, c.stderr), c.stderr, file, !noCheck)
	if _, ok := errors.AsType[*config.AnswerError](err); ok {
		return usageError{Err: err}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Saved %s (mode 0600): provider %s, model %s.\n", file, values["MADSPARK_PROVIDER"], values["MADSPARK_MODEL"])
	return nil
}
