package debate

// Settings are a debate's options as a command line or a server takes
// them, before there is a query.
type Settings struct {
	// Mode is auto (route by complexity), simple or complex.
	Mode       string
	Rounds     int
	PeerReview bool
	// ProposerModels is "[provider:]model" for the drafter, critic and
	// synthesizer, comma-separated (see ParseProposerModels).
	ProposerModels string
	// Roles override roles' configurations, "ROLE=TEMPERATURE/MAX_TOKENS"
	// each (see ParseRoleConfig).
	Roles    []string
	NoSearch bool
}

// Params returns the parameters that answer query with these settings,
// validated.
func (s Settings) Params(query string) (Params, error) {
	p, err := s.params(query)
	if err != nil {
		return p, err
	}
	return p, p.Validate()
}

// Check checks the settings alone, before there is a query.
func (s Settings) Check() error {
	p, err := s.params("")
	if err != nil {
		return err
	}
	return p.ValidateSettings()
}

func (s Settings) params(query string) (Params, error) {
	p := DefaultParams()
	p.Query, p.Mode, p.Rounds, p.PeerReview, p.NoSearch = query, s.Mode, s.Rounds, s.PeerReview, s.NoSearch
	for _, spec := range s.Roles {
		if err := ParseRoleConfig(p.Roles, spec); err != nil {
			return p, err
		}
	}
	return p, ParseProposerModels(p.Roles, s.ProposerModels)
}
