package madspark

import "testing"

func TestParentOf(t *testing.T) {
	for _, c := range []struct {
		tags     []string
		kind, id string
		ok       bool
	}{
		{nil, "", "", false},
		{[]string{"food", "cities"}, "", "", false},
		{[]string{"food", ParentTag(ParentEval, "e1")}, "eval", "e1", true},
		{[]string{ParentTag(ParentBatch, "b1"), ParentTag(ParentEval, "e1")}, "batch", "b1", true},
		{[]string{"chat:conv_1"}, "chat", "conv_1", true},
		{[]string{"eval:"}, "", "", false},
		{[]string{"note:idea"}, "", "", false},
	} {
		kind, id, ok := ParentOf(c.tags)
		if kind != c.kind || id != c.id || ok != c.ok {
			t.Errorf("ParentOf(%q) = %q, %q, %v; want %q, %q, %v", c.tags, kind, id, ok, c.kind, c.id, c.ok)
		}
		for _, tag := range c.tags {
			if want := c.ok && (tag == ParentTag(kind, id)); want && !IsParentTag(tag) {
				t.Errorf("IsParentTag(%q) = false", tag)
			}
		}
	}
	if IsParentTag("food") || IsParentTag("eval") || IsParentTag("x:y") {
		t.Error("IsParentTag takes a label for a parent")
	}
}
