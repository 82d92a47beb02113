package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one client on r and w (standard input and output)
// until ctx ends or the client closes r. Each line of r is one message: a
// line that is not one — text that is not JSON, JSON that is not a
// JSON-RPC message, a line longer than MaxBodyBytes — is answered with a
// JSON-RPC error (-32700, -32600) and the session goes on.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	out := &lockedWriter{w: w}
	pr, pw := io.Pipe()
	defer pr.Close()
	go func() { _ = pw.CloseWithError(filterLines(r, pw, out)) }()
	err := s.mcp.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: nopCloser{out}})
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return err
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// lockedWriter writes one message at a time: the SDK's and the errors of
// filterLines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// filterLines copies the lines of r that are JSON-RPC messages (or batches
// of them) to to, and answers each other line on out with a JSON-RPC
// error. It returns at the end of r (nil) or when to is closed.
func filterLines(r io.Reader, to io.Writer, out io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br, MaxBodyBytes)
		if tooLong {
			if werr := writeLineError(out, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: a message is at most %d bytes", MaxBodyBytes)); werr != nil {
				return werr
			}
		} else if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			if id, code, msg := checkMessage(trimmed); code != 0 {
				if werr := writeLineError(out, id, code, msg); werr != nil {
					return werr
				}
			} else if _, werr := to.Write(append(trimmed, '\n')); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine reads a line of at most max bytes; a longer one is read to its
// end and dropped (tooLong).
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > max {
			tooLong = true
		}
		if !tooLong {
			line = append(line, part...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			line = nil
		}
		return line, tooLong, err
	}
}

// checkMessage reports what is wrong with a line, as a JSON-RPC error code
// and message (code 0: nothing), and the ID of the request it was, if it
// can be read.
func checkMessage(line []byte) (id any, code int64, msg string) {
	if !json.Valid(line) {
		return nil, jsonrpc.CodeParseError, "Parse error: the line is not valid JSON"
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(line, &batch); err != nil || len(batch) == 0 {
			return nil, jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch"
		}
		for i, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				return nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: message %d of the batch: %s", i, oneLine(err.Error()))
			}
		}
		return nil, 0, ""
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		var v struct {
			ID any `json:"id"`
		}
		_ = json.Unmarshal(line, &v)
		switch v.ID.(type) {
		case string, float64:
			id = v.ID
		}
		return id, jsonrpc.CodeInvalidRequest, "Invalid Request: " + oneLine(err.Error())
	}
	return nil, 0, ""
}

// writeLineError writes a JSON-RPC error response, with id (null when
// nil).
func writeLineError(out io.Writer, id any, code int64, msg string) error {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	if err != nil {
		return err
	}
	_, err = out.Write(append(b, '\n'))
	return err
}
