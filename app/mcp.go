package app

import (
	"context"
	"io"
	"time"

	"github.com/madspark/madspark/mcpserver"
	"github.com/madspark/madspark/pipeline"
)

// MCPConfig is how `madspark mcp` serves.
type MCPConfig struct {
	// PipelinesDir is a directory of pipeline files served beside the
	// built-in pipelines.
	PipelinesDir string
	// Timeout bounds each run; zero means DefaultMCPTimeout.
	Timeout time.Duration
}

// DefaultMCPTimeout bounds each run of an MCP client by default.
const DefaultMCPTimeout = mcpserver.DefaultTimeout

// CheckMCP checks what `madspark mcp` would be refused for, before
// anything starts.
func CheckMCP(c MCPConfig) error {
	if c.Timeout < 0 {
		return Inputf("--timeout must not be negative, got %s", c.Timeout)
	}
	return nil
}

// mcpServer is the MCP server of the app's pipelines (reg, with the
// pipeline files of dir).
func (a *App) mcpServer(reg *pipeline.Registry, dir string, timeout time.Duration) (*mcpserver.Server, error) {
	font, err := PDFFont(a.cfg.Getenv)
	if err != nil {
		return nil, err
	}
	resume := ""
	if dir != "" {
		resume = "--pipelines " + ShellQuote(dir)
	}
	s, err := mcpserver.New(mcpserver.Config{Registry: reg, Engine: a.Engine, Store: a.Store, Mode: a.Info.Mode(),
		Provider: a.Info.Name, Model: a.Info.Model, Version: Version, Logger: a.cfg.Logger, PDFFont: font,
		Timeout: timeout, ResumeArgs: resume,
		// A call beyond the provider's capacity is refused before its run
		// is recorded, as on /v1.
		Admit: a.limiter.Admit})
	if err != nil {
		return nil, InputError{err}
	}
	return s, nil
}

// ServeMCP serves the pipelines over the Model Context Protocol to one
// client on in and out (standard input and output) until ctx ends or the
// client closes in. Nothing else is written to out.
func (a *App) ServeMCP(ctx context.Context, c MCPConfig, in io.Reader, out io.Writer) error {
	reg, err := a.Registry(c.PipelinesDir)
	if err != nil {
		return err
	}
	s, err := a.mcpServer(reg, c.PipelinesDir, c.Timeout)
	if err != nil {
		return err
	}
	if a.Info.Mock {
		a.notice("mock mode (%s): outputs are mock data, no model is called", a.Info.Reason)
	}
	a.notice("serving MCP on standard input and output: %d pipelines as tools (provider %s/%s, %s)",
		len(reg.List()), a.Info.Name, a.Info.Model, a.Info.Mode())
	return s.ServeStdio(ctx, in, out)
}
