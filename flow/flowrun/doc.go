// Package flowrun holds the tests of package flow that run pipeline files
// on the engine, with a SQLite store. They live apart from package flow's
// own tests so that the parser's fuzz target is not built with the SQLite
// driver, whose coverage counters would slow fuzzing to a crawl.
package flowrun
