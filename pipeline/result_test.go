package pipeline

import (
	"strings"
	"testing"

	"github.com/madspark/madspark"
)

func TestStoredResult(t *testing.T) {
	type result struct{ Answer string }
	res, err := StoredResult[result](&madspark.Run{ID: "r1", Result: []byte(`{"Answer":"42"}`)})
	if err != nil || res.Answer != "42" {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := StoredResult[result](&madspark.Run{ID: "r2", Result: []byte(`[`)}); err == nil || !strings.HasPrefix(err.Error(), "run r2: stored result: ") {
		t.Fatalf("err %v", err)
	}
}
