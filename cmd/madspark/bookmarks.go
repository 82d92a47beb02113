package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/app"
	"github.com/madspark/madspark/bookmark"
	"github.com/madspark/madspark/cmdline"
	"github.com/madspark/madspark/export"
)

// checkTags checks the tags of flag (see bookmark.Tags).
func checkTags(flag string, tags []string) ([]string, error) {
	out, err := bookmark.Tags(tags)
	if err != nil {
		return nil, usagef("%s: %v", flag, err)
	}
	return out, nil
}

func (c *cli) bookmarksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bookmarks",
		Short: "List, search, show, remove, export and import bookmarked ideas",
		Long: `Bookmarks are ideas kept from runs (madspark spark --bookmark-tags, or the
web UI), in the database. They can be remixed: madspark spark --remix ID….
Export and import use the bookmarks.json shape ({"ID": {"id", "idea_text",
"topic", "context", "score", "improved_score", "tags", "timestamp",
"metadata"}}).`,
	}
	var (
		format        string
		tags          []string
		limit, offset int
	)
	listFlags := func(sub *cobra.Command) {
		sub.Flags().StringVar(&format, "output-format", "table", "table|json")
		sub.Flags().StringSliceVar(&tags, "tag", nil, "only bookmarks with every one of these tags (repeat or comma-separate)")
		sub.Flags().IntVar(&limit, "limit", 20, "at most this many (1-1000)")
		sub.Flags().IntVar(&offset, "offset", 0, "skip this many")
	}
	listing := func(cmd *cobra.Command, query string) error {
		if err := cmdline.CheckFormat(format, "table", "json"); err != nil {
			return err
		}
		if limit < 1 || limit > 1000 || offset < 0 {
			return usagef("--limit must be 1..1000 and --offset not negative")
		}
		t, err := checkTags("--tag", tags)
		if err != nil {
			return err
		}
		db, err := app.OpenStore(cmd.Context(), c.env)
		if err != nil {
			return err
		}
		defer db.Close()
		bs, total, err := db.Bookmarks(cmd.Context(), madspark.BookmarkFilter{Tags: t, Query: query, Limit: limit, Offset: offset})
		if err != nil {
			return err
		}
		if format == "json" {
			return writeJSON(c, map[string]any{"bookmarks": bs, "total": total})
		}
		if len(bs) == 0 {
			if total == 0 && query == "" && len(t) == 0 {
				fmt.Fprintln(c.stderr, "madspark: no bookmarks yet; keep a run's ideas with madspark spark TOPIC --bookmark-tags TAG")
			} else {
				fmt.Fprintln(c.stderr, "madspark: no bookmarks match")
			}
			return nil
		}
		if err := bookmark.WriteTable(c.stdout, bs); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "madspark: %d of %d bookmarks\n", len(bs), total)
		return nil
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List bookmarks, newest first",
		Args:  cmdline.Args(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return listing(cmd, "") },
	}
	listFlags(list)
	search := &cobra.Command{
		Use:   "search TEXT",
		Short: "Bookmarks whose topic, context, idea or improved idea contains TEXT (ignoring case)",
		Args:  cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := strings.TrimSpace(args[0])
			if q == "" {
				return usagef("search: TEXT must not be empty")
			}
			return listing(cmd, q)
		},
	}
	listFlags(search)

	var showFormat string
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a bookmark",
		Args:  cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckFormat(showFormat, "text", "json"); err != nil {
				return err
			}
			db, err := app.OpenStore(cmd.Context(), c.env)
			if err != nil {
				return err
			}
			defer db.Close()
			b, err := db.Bookmark(cmd.Context(), args[0])
			if errors.Is(err, madspark.ErrNotFound) {
				return usagef("no bookmark %s", args[0])
			}
			if err != nil {
				return err
			}
			if showFormat == "json" {
				return writeJSON(c, b)
			}
			return bookmark.WriteText(c.stdout, b)
		},
	}
	show.Flags().StringVar(&showFormat, "output-format", "text", "text|json")

	var removeFormat string
	remove := &cobra.Command{
		Use:   "remove ID…",
		Short: "Remove bookmarks",
		Args:  cmdline.Args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckFormat(removeFormat, "text", "json"); err != nil {
				return err
			}
			db, err := app.OpenStore(cmd.Context(), c.env)
			if err != nil {
				return err
			}
			defer db.Close()
			// All must exist, or none is removed.
			err = bookmark.Remove(cmd.Context(), db, args)
			if nf, ok := errors.AsType[*bookmark.NotFoundError](err); ok {
				return usagef("%v; nothing removed", nf)
			} else if err != nil {
				return err
			}
			if removeFormat == "json" {
				return writeJSON(c, map[string]any{"removed": args})
			}
			fmt.Fprintf(c.stderr, "madspark: removed %d bookmark(s)\n", len(args))
			return nil
		},
	}
	remove.Flags().StringVar(&removeFormat, "output-format", "text", "text|json")

	var exportOut, exportFormat string
	exp := &cobra.Command{
		Use:   "export",
		Short: "Write every bookmark as bookmarks.json (to --output, atomically, or standard output)",
		Args:  cmdline.Args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cmdline.CheckFormat(exportFormat, "json"); err != nil {
				return err
			}
			if err := cmdline.CheckOutput(exportOut); err != nil {
				return err
			}
			db, err := app.OpenStore(cmd.Context(), c.env)
			if err != nil {
				return err
			}
			defer db.Close()
			f, err := bookmark.Export(cmd.Context(), db)
			if err != nil {
				return err
			}
			data, err := marshalIndent(f)
			if err != nil {
				return err
			}
			return c.emit(data, exportOut, fmt.Sprintf(" (%d bookmarks)", len(f)))
		},
	}
	exp.Flags().StringVarP(&exportOut, "output", "o", "", "write to FILE instead of standard output")
	exp.Flags().StringVar(&exportFormat, "output-format", "json", "json (the only format of a bookmarks file)")

	var importFormat string
	imp := &cobra.Command{
		Use:   "import FILE",
		Short: "Import bookmarks from a bookmarks.json; those whose ID is kept already are skipped",
		Long: `Imports every bookmark of FILE (the bookmarks.json shape). Every entry is
checked first: one that is not valid (an unknown field, an empty idea, a
score outside 0-10, a bad timestamp) is named and nothing is imported.`,
		Args: cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cmdline.CheckFormat(importFormat, "text", "json"); err != nil {
				return err
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return usageError{Err: fmt.Errorf("read bookmarks: %w", err)}
			}
			f, err := bookmark.Parse(data)
			if err != nil {
				return usagef("%s: %v", args[0], err)
			}
			db, err := app.OpenStore(cmd.Context(), c.env)
			if err != nil {
				return err
			}
			defer db.Close()
			imported, skipped, err := bookmark.Import(cmd.Context(), db, f)
			if _, ok := errors.AsType[*bookmark.FieldError](err); ok {
				return usagef("%s: %v; nothing imported", args[0], err)
			}
			if err != nil {
				return err
			}
			if importFormat == "json" {
				return writeJSON(c, map[string]int{"imported": imported, "skipped": skipped})
			}
			fmt.Fprintf(c.stderr, "madspark: imported %d bookmark(s), skipped %d already kept\n", imported, skipped)
			return nil
		},
	}
	imp.Flags().StringVar(&importFormat, "output-format", "text", "text|json")

	cmd.AddCommand(list, search, show, remove, exp, imp)
	for _, sub := range cmd.Commands() {
		sub.SetFlagErrorFunc(cmdline.FlagError)
	}
	return cmd
}

func (c *cli) exportCmd() *cobra.Command {
	var format, output string
	cmd := &cobra.Command{
		Use:   "export RUN_ID",
		Short: "Export a run of any pipeline as JSON, CSV, Markdown or PDF",
		Long: `Writes a recorded run as a file: json (any run: its record around its
result), or for a succeeded run csv (one row per idea, grade or handoff, every
score a column), markdown or pdf (the run laid out as a document with its
contents).

Text formats go to standard output unless --output FILE; a PDF goes to
--output, or to madspark-<pipeline>-<id8>.pdf in the outputs directory
($MADSPARK_OUTPUT_DIR, else ./outputs).
Files are written atomically.`,
		Args: cmdline.Args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			format = export.Canonical(format)
			if err := cmdline.CheckFormat(format, export.Formats...); err != nil {
				return err
			}
			if err := cmdline.CheckOutput(output); err != nil {
				return err
			}
			ctx := cmd.Context()
			a, err := c.open(ctx, false)
			if err != nil {
				return err
			}
			defer a.Close()
			rec, f, err := a.Export(ctx, args[0], format)
			if err != nil {
				return err
			}
			if output == "" && format == "pdf" {
				dir := app.OutputsDir(c.env)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return fmt.Errorf("outputs directory: %w", err)
				}
				output = filepath.Join(dir, f.Name)
			}
			return c.emit(f.Data, output, fmt.Sprintf(" (%s run %s)", rec.Pipeline, rec.ID))
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", strings.Join(export.Formats, "|")+" (md is markdown)")
	// --output-format, as every other command spells it.
	cmd.Flags().StringVar(&format, "output-format", "json", "the same as --format")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to FILE (atomically)")
	return cmd
}
