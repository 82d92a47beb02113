package agent

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

var prompts = fstest.MapFS{
	"ok.tmpl":     {Data: []byte(`{{define "system"}} You judge {{.Topic}}. {{end}}{{define "user"}}Items: {{join .Items ", "}} ({{len .Items | dec}} after the first){{end}}`)},
	"nouser.tmpl": {Data: []byte(`{{define "system"}}x{{end}}`)},
	"broken.tmpl": {Data: []byte(`{{define "system"}}{{.X}`)},
}

type input struct {
	Topic string
	Items []string
}

type verdict struct {
	Score float64 `json:"score" jsonschema:"minimum=0,maximum=10"`
}

func TestRequestRendering(t *testing.T) {
	a, err := New(prompts, "test.judge", "ok.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	req, err := a.Request(input{"tea", []string{"a", "b", "c"}}, Options{Temperature: 0.3, Model: "m", Timeout: time.Second, MaxTokens: 9})
	if err != nil {
		t.Fatal(err)
	}
	if req.System != "You judge tea." || req.Prompt() != "Items: a, b, c (2 after the first)" || req.Agent != "test.judge" ||
		req.Temperature != 0.3 || req.Model != "m" || req.MaxTokens != 9 || req.Timeout != time.Second || req.Input.(input).Topic != "tea" {
		t.Fatalf("request %+v", req)
	}
	if _, err := a.Request(struct{ Other string }{}, Options{}); err == nil || !strings.Contains(err.Error(), "test.judge: prompt") {
		t.Fatalf("missing key: %v", err)
	}
	for file, want := range map[string]string{"nouser.tmpl": `no "user" template`, "broken.tmpl": "prompt broken.tmpl", "none.tmpl": "none.tmpl"} {
		if _, err := New(prompts, "x", file); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", file, err)
		}
	}
}

func TestTextAndJSON(t *testing.T) {
	a, _ := New(prompts, "test.judge", "ok.tmpl")
	reply := "  "
	c := llm.ClientFunc(func(_ context.Context, req *llm.Request) (*llm.Response, error) {
		return &llm.Response{Text: reply}, nil
	})
	in := input{"tea", []string{"a"}}
	if _, err := a.Text(context.Background(), c, in, Options{}); err == nil || !strings.Contains(err.Error(), "empty reply") {
		t.Fatalf("empty: %v", err)
	}
	reply = " fine \n"
	if s, err := a.Text(context.Background(), c, in, Options{}); err != nil || s != "fine" {
		t.Fatalf("%q %v", s, err)
	}
	spec, _ := structured.NewSpec[verdict]("verdict")
	reply = "```json\n{\"score\": 7}\n```"
	if v, err := JSON(context.Background(), c, a, spec, in, Options{}, nil); err != nil || v.Score != 7 {
		t.Fatalf("%+v %v", v, err)
	}
}
