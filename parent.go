package madspark

import "strings"

// The kinds of parent a run can have: the eval, batch or conversation it
// was made for. A sub-run carries its parent as a tag "KIND:ID" (see
// ParentTag), so that listings can group it under its parent.
const (
	ParentEval         = "eval"
	ParentBatch        = "batch"
	ParentConversation = "chat"
)

// ParentTag is the tag that marks a run as made for the eval, batch or
// conversation (kind) with ID id.
func ParentTag(kind, id string) string { return kind + ":" + id }

// ParentOf returns the parent a run's tags name, the first one when there
// are several; ok is false when they name none.
func ParentOf(tags []string) (kind, id string, ok bool) {
	for _, t := range tags {
		if k, id, found := strings.Cut(t, ":"); found && id != "" && isParentKind(k) {
			return k, id, true
		}
	}
	return "", "", false
}

// IsParentTag reports whether tag marks a run's parent rather than being
// a label a person gave it.
func IsParentTag(tag string) bool {
	k, id, found := strings.Cut(tag, ":")
	return found && id != "" && isParentKind(k)
}

func isParentKind(k string) bool {
	return k == ParentEval || k == ParentBatch || k == ParentConversation
}
