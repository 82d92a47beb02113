package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/madspark/madspark"
)

func TestRememberedIdeas(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ideas.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	idea := func(mem, name string, it int) madspark.RememberedIdea {
		return madspark.RememberedIdea{Memory: mem, Name: name, Data: json.RawMessage(`{"n":"` + name + `"}`), RunID: "r1", Iteration: it, AcceptedAt: at}
	}
	if err := db.RememberIdeas(ctx, []madspark.RememberedIdea{idea("food", "b", 0), idea("food", "a", 0), idea("other", "x", 1)}); err != nil {
		t.Fatal(err)
	}
	// A repeat keeps the first record; a new idea goes to the end.
	dup := idea("food", "b", 5)
	dup.Data = json.RawMessage(`{"n":"changed"}`)
	if err := db.RememberIdeas(ctx, []madspark.RememberedIdea{dup, idea("food", "c", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := db.RememberIdeas(ctx, []madspark.RememberedIdea{{Memory: "food", Name: "bad", Data: json.RawMessage(`{`)}}); err == nil {
		t.Fatal("invalid JSON accepted")
	}
	db.Close()
	db, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.RememberedIdeas(ctx, "food")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Name != "b" || got[1].Name != "a" || got[2].Name != "c" || got[0].Iteration != 0 || string(got[0].Data) != `{"n":"b"}` || !got[0].AcceptedAt.Equal(at) {
		t.Fatalf("got %+v", got)
	}
	if none, _ := db.RememberedIdeas(ctx, "nothing"); none == nil || len(none) != 0 {
		t.Fatalf("empty memory = %#v", none)
	}
}
