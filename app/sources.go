package app

import (
	"os"
	"time"

	"github.com/madspark/madspark/document/pdf"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/scholar"
	"github.com/madspark/madspark/search"
)

// literatureTTL is how long literature searches are kept in the cache;
// webTTL how long web searches are.
const (
	literatureTTL = 7 * 24 * time.Hour
	webTTL        = 24 * time.Hour
)

// webSearch is the web search configured in the settings, behind the
// cache; nil when none is.
func (a *App) webSearch() search.Provider {
	if s := search.FromEnv(a.cfg.Getenv); s != nil {
		return search.Cached(s, a.Cache, webTTL)
	}
	return nil
}

// assessConfig is the assess pipeline's configuration: web search when a
// search provider is configured and the run is live.
func (a *App) assessConfig() assess.Config {
	cfg := assess.Config{Mock: a.Info.Mock, Logger: a.cfg.Logger}
	switch s := a.webSearch(); {
	case a.Info.Mock:
		cfg.NoSearchNote = "web tools off in mock mode"
	case s == nil:
		cfg.NoSearchNote = assess.NoSearchNote
	default:
		cfg.Searcher = s
	}
	return cfg
}

// proposalSources are the literature sources of a run: the offline source
// in mock mode, else the scholarly sources and the web search configured
// in the settings, each behind the cache.
func (a *App) proposalSources() []search.Provider {
	if a.Info.Mock {
		return []search.Provider{scholar.NewOffline()}
	}
	sources := scholar.FromEnv(a.cfg.Getenv)
	if web := search.FromEnv(a.cfg.Getenv); web != nil {
		sources = append(sources, web)
	}
	for i, s := range sources {
		sources[i] = search.Cached(s, a.Cache, literatureTTL)
	}
	return sources
}

// PDFFont reads the fallback TrueType font that MADSPARK_PDF_FONT names,
// for characters the bundled fonts lack (CJK); nil when it is not set.
func PDFFont(getenv func(string) string) ([]byte, error) {
	path := getenv("MADSPARK_PDF_FONT")
	if path == "" {
		return nil, nil
	}
	font, err := os.ReadFile(path)
	if err != nil {
		return nil, Inputf("MADSPARK_PDF_FONT: %v", err)
	}
	if err := pdf.CheckFont(font); err != nil {
		return nil, Inputf("MADSPARK_PDF_FONT %s: %v", path, err)
	}
	return font, nil
}
