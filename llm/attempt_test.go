package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestUsageJSON(t *testing.T) {
	priced := Usage{LLMCalls: 2, InputTokens: 10, OutputTokens: 5, CostUSD: 0.25}
	b, err := json.Marshal(priced)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"cost_usd":0.25`) || !strings.Contains(string(b), `"priced":true`) {
		t.Errorf("priced usage = %s", b)
	}
	unpriced := Usage{LLMCalls: 3, InputTokens: 10, UnpricedCalls: 1}
	b, err = json.Marshal(unpriced)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"cost_usd":null`) || !strings.Contains(string(b), `"priced":false`) || !strings.Contains(string(b), `"unpriced_calls":1`) {
		t.Errorf("unpriced usage = %s", b)
	}
	for _, u := range []Usage{priced, unpriced} {
		b, _ := json.Marshal(u)
		var back Usage
		if err := json.Unmarshal(b, &back); err != nil || back != u {
			t.Errorf("%s decoded as %+v, %v", b, back, err)
		}
	}
	if got := unpriced.String(); !strings.HasSuffix(got, "; unpriced") {
		t.Errorf("String = %q", got)
	}
	sum := priced
	sum.Add(unpriced)
	if sum.Priced() || sum.Cost() != "unpriced" || priced.Cost() != "$0.2500" {
		t.Errorf("sum = %+v (%s), priced cost %s", sum, sum.Cost(), priced.Cost())
	}

	b, err = MarshalUsageWith(unpriced, struct {
		WallMS int64 `json:"wall_ms"`
	}{7})
	if err != nil || !strings.HasSuffix(string(b), `"priced":false,"wall_ms":7}`) {
		t.Errorf("MarshalUsageWith = %s, %v", b, err)
	}
	var e struct {
		WallMS int64 `json:"wall_ms"`
	}
	var u Usage
	if err := UnmarshalUsageWith(b, &u, &e); err != nil || u != unpriced || e.WallMS != 7 {
		t.Errorf("UnmarshalUsageWith = %+v, %+v, %v", u, e, err)
	}
}

func TestErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{&Error{Status: 500}, "500"},
		{fmt.Errorf("gave up after 4 attempts: %w", &Error{Status: 503}), "503"},
		{&Error{Status: 429}, ErrorRateLimited},
		{&Error{Err: context.DeadlineExceeded, Retryable: true}, ErrorTimeout},
		{context.DeadlineExceeded, ErrorTimeout},
		{&Error{Message: "empty reply", Invalid: true}, ErrorInvalidReply},
		{errors.New("boom"), ErrorOther},
		{context.Canceled, ErrorOther},
	} {
		if got := ErrorType(tc.err); got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

type recorder struct {
	name string
	log  *[]string
}

func (r recorder) Sending(context.Context) { *r.log = append(*r.log, r.name+" sending") }
func (r recorder) Attempted(_ context.Context, a *Attempt) {
	*r.log = append(*r.log, r.name+" "+a.Agent)
}

func TestAttemptObserversNest(t *testing.T) {
	var log []string
	ctx := WithAttemptObserver(context.Background(), recorder{"outer", &log})
	inner := WithAttemptObserver(ctx, recorder{"inner", &log})
	ObserveSending(inner)
	ObserveAttempt(inner, &Attempt{Agent: "a"})
	ObserveAttempt(ctx, &Attempt{Agent: "b"})
	want := "outer sending,inner sending,inner a,outer a,outer b"
	if got := strings.Join(log, ","); got != want {
		t.Errorf("told %s, want %s", got, want)
	}

	slot := WithWireSlot(context.Background())
	if _, ok := Sent(slot); ok {
		t.Error("Sent before SendingWire")
	}
	w := WireOf(&Request{System: "s", Messages: []Message{{Role: RoleUser, Content: "u"}}})
	SendingWire(slot, w)
	if got, ok := Sent(slot); !ok || len(got.Messages) != 2 || got.Messages[0].Role != RoleSystem {
		t.Errorf("Sent = %+v, %v", got, ok)
	}
	SendingWire(context.Background(), w) // no slot: nothing happens
}
