package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"reflect"

	msqlite "modernc.org/sqlite"
)

// The store's connections keep the statements they run prepared. SQLite
// parses a statement each time it is prepared, and the driver prepares
// every statement it is given as text; the store, and the job queue on the
// store's handle, run the same few statements over and over, so parsing
// was most of what a small statement cost. A connection keeps the last
// maxStmts statements it ran, by their text, and runs a statement again
// from there; a statement whose rows are still being read is prepared
// anew for another use meanwhile.

//
// The write connection's statements run with their context's values but
// not its end (detached): the driver would start a goroutine for each
// statement, to interrupt it should its context end, and a write's
// statements are short. A write whose context has ended is not begun
// (database/sql checks, and so does the committer), and a wait for the
// file's lock ends with busy_timeout.

// maxStmts bounds the statements a connection keeps prepared.
const maxStmts = 256

// openDB opens a pool of connections to dsn that keep their statements,
// detached when detached is true.
func openDB(dsn string, detached bool) (*stmtConnector, error) {
	base, err := msqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return &stmtConnector{Connector: base, detached: detached}, nil
}

// stmtConnector opens stmtConns.
type stmtConnector struct {
	driver.Connector
	detached bool
}

func (c *stmtConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stmtConn{Conn: conn, stmts: map[string]*keptStmt{}, detached: c.detached}, nil
}

// connAPI is what database/sql uses of the driver's connections.
type connAPI interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// stmtConn is a connection that keeps its statements prepared. database/sql
// uses a connection from one goroutine at a time.
type stmtConn struct {
	driver.Conn
	stmts    map[string]*keptStmt
	detached bool
}

// ctx is the context the driver is given for one with ctx.
func (c *stmtConn) ctx(ctx context.Context) context.Context {
	if c.detached {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// keptStmt is a prepared statement; busy while its rows are read.
type keptStmt struct {
	st   driver.Stmt
	busy bool
}

func (c *stmtConn) api() connAPI { return c.Conn.(connAPI) }

// stmt returns the kept statement of query, preparing it the first time;
// fresh is true for a statement prepared for this use only (query's is
// busy), which the caller closes.
func (c *stmtConn) stmt(ctx context.Context, query string) (k *keptStmt, fresh bool, err error) {
	if k := c.stmts[query]; k != nil && !k.busy {
		return k, false, nil
	}
	st, err := c.api().PrepareContext(ctx, query)
	if err != nil {
		return nil, false, err
	}
	k = &keptStmt{st: st}
	if c.stmts[query] != nil {
		return k, true, nil
	}
	if len(c.stmts) >= maxStmts {
		c.drop()
	}
	c.stmts[query] = k
	return k, false, nil
}

// drop closes the kept statements that are not in use and forgets them.
func (c *stmtConn) drop() {
	for q, k := range c.stmts {
		if !k.busy {
			_ = k.st.Close()
			delete(c.stmts, q)
		}
	}
}

func (c *stmtConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ctx = c.ctx(ctx)
	k, fresh, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if fresh {
		defer k.st.Close()
	}
	return k.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *stmtConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	ctx = c.ctx(ctx)
	k, fresh, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := k.st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		if fresh {
			_ = k.st.Close()
		}
		return nil, err
	}
	k.busy = true
	return &keptRows{Rows: rows, k: k, fresh: fresh}, nil
}

// keptRows frees their statement when closed.
type keptRows struct {
	driver.Rows
	k      *keptStmt
	fresh  bool
	closed bool
}

func (r *keptRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.Rows.Close()
	r.k.busy = false
	if r.fresh {
		err = errors.Join(err, r.k.st.Close())
	}
	return err
}

// The column types are the driver's rows' own.

func (r *keptRows) ColumnTypeDatabaseTypeName(i int) string {
	return r.Rows.(driver.RowsColumnTypeDatabaseTypeName).ColumnTypeDatabaseTypeName(i)
}

func (r *keptRows) ColumnTypeLength(i int) (int64, bool) {
	return r.Rows.(driver.RowsColumnTypeLength).ColumnTypeLength(i)
}

func (r *keptRows) ColumnTypeNullable(i int) (bool, bool) {
	return r.Rows.(driver.RowsColumnTypeNullable).ColumnTypeNullable(i)
}

func (r *keptRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	return r.Rows.(driver.RowsColumnTypePrecisionScale).ColumnTypePrecisionScale(i)
}

func (r *keptRows) ColumnTypeScanType(i int) reflect.Type {
	return r.Rows.(driver.RowsColumnTypeScanType).ColumnTypeScanType(i)
}

func (c *stmtConn) Close() error {
	for _, k := range c.stmts {
		_ = k.st.Close()
	}
	c.stmts = nil
	return c.Conn.Close()
}

// The rest is the driver's own.

func (c *stmtConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.api().BeginTx(c.ctx(ctx), opts)
}

func (c *stmtConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.api().PrepareContext(ctx, query)
}

func (c *stmtConn) Ping(ctx context.Context) error { return c.api().Ping(ctx) }

func (c *stmtConn) ResetSession(ctx context.Context) error { return c.api().ResetSession(ctx) }

func (c *stmtConn) IsValid() bool { return c.api().IsValid() }
