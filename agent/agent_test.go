package agent

import (
	"context"
	"errors"
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

func TestFromText(t *testing.T) {
	a, err := FromText("test.text", "You judge {{.Topic}}.", "Items: {{join .Items \"; \"}}")
	if err != nil {
		t.Fatal(err)
	}
	req, err := a.Request(input{"tea", []string{"a", "b"}}, Options{})
	if err != nil || req.System != "You judge tea." || req.Prompt() != "Items: a; b" || req.Agent != "test.text" {
		t.Fatalf("%+v %v", req, err)
	}
	if _, err := FromText("test.bad", "ok", "{{.X"); err == nil || !strings.Contains(err.Error(), "test.bad: user prompt") {
		t.Fatalf("bad user template: %v", err)
	}
	if _, err := a.Request(struct{ Other string }{}, Options{}); err == nil {
		t.Fatal("missing field rendered")
	}
}

func TestCheckedText(t *testing.T) {
	a, _ := FromText("test.writer", "Write.", "About {{.Topic}}.")
	in := input{Topic: "tea"}
	check := func(s *string, p *structured.Problems) {
		if !strings.Contains(*s, "tea") {
			p.Hard("topic", "the text does not mention tea")
		}
		if strings.Contains(*s, "biscuit") {
			p.Fix("scope", "biscuits are off topic", func() string {
				*s = strings.ReplaceAll(*s, " and biscuit", "")
				return "biscuit dropped"
			})
		}
	}
	for _, tc := range []struct {
		name    string
		replies []llm.Response
		want    string
		wantErr string
		calls   int
	}{
		{"first reply good", []llm.Response{{Text: " tea time "}}, "tea time", "", 1},
		{"repaired", []llm.Response{{Text: "coffee"}, {Text: "tea"}}, "tea", "", 2},
		{"empty then good", []llm.Response{{Text: " "}, {Text: "tea"}}, "tea", "", 2},
		{"truncated then good", []llm.Response{{Text: "tea and", FinishReason: "length"}, {Text: "tea"}}, "tea", "", 2},
		{"truncated twice is kept", []llm.Response{{Text: "tea and", FinishReason: "length"}, {Text: "tea or", FinishReason: "length"}}, "tea or", "", 2},
		{"soft fix, one call", []llm.Response{{Text: "tea and biscuit"}}, "tea", "", 1},
		{"fails twice", []llm.Response{{Text: "coffee"}, {Text: "cocoa"}}, "", "does not mention tea", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen []*llm.Request
			c := llm.ClientFunc(func(_ context.Context, req *llm.Request) (*llm.Response, error) {
				cp := *req
				seen = append(seen, &cp)
				r := tc.replies[len(seen)-1]
				return &r, nil
			})
			got, err := a.CheckedText(context.Background(), c, in, Options{}, check)
			if len(seen) != tc.calls {
				t.Fatalf("%d calls, want %d", len(seen), tc.calls)
			}
			if tc.wantErr != "" {
				var re *structured.ReplyError
				if !errors.As(err, &re) || re.Agent != "test.writer" || re.Raw != "cocoa" || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v", got, err)
			}
			if tc.calls == 2 {
				msgs := seen[1].Messages
				if len(msgs) != 3 || msgs[1].Role != llm.RoleAssistant || msgs[1].Content != tc.replies[0].Text || !strings.Contains(msgs[2].Content, "not acceptable") {
					t.Fatalf("repair turn = %+v", msgs)
				}
				if len(seen[0].Messages) != 1 {
					t.Fatal("the first request was modified")
				}
			}
		})
	}
}
