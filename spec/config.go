package spec

// CatalogConfig is the body of GET /v1/config.
type CatalogConfig struct {
	// Defaults are applied before the client's own configuration.
	Defaults map[string]string `json:"defaults"`
	// Overrides are applied after it; "prefix" selects the warehouse.
	Overrides map[string]string `json:"overrides"`
	// Endpoints names every route the server serves, "METHOD /v1/{prefix}/...".
	Endpoints []string `json:"endpoints,omitempty"`
	// IdempotencyKeyLifetime is an ISO-8601 duration (e.g. "PT30M"); its
	// presence tells clients the server honours Idempotency-Key.
	IdempotencyKeyLifetime string `json:"idempotency-key-lifetime,omitempty"`
}
