package structured

import "context"

// formatCandidates reads a reply in the formats beyond JSON that models
// write: YAML, label-value text, markdown tables.
func formatCandidates(ctx context.Context, text string) []candidate {
	return nil
}
