package spec

// CreateNamespaceRequest is the body of POST /v1/{prefix}/namespaces.
type CreateNamespaceRequest struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties,omitempty"`
}

// CreateNamespaceResponse answers CreateNamespaceRequest.
type CreateNamespaceResponse struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

// GetNamespaceResponse is the body of GET /v1/{prefix}/namespaces/{namespace}.
type GetNamespaceResponse struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

// ListNamespacesResponse is the body of GET /v1/{prefix}/namespaces.
type ListNamespacesResponse struct {
	NextPageToken *string    `json:"next-page-token,omitempty"`
	Namespaces    [][]string `json:"namespaces"`
}

// UpdateNamespacePropertiesRequest is the body of
// POST /v1/{prefix}/namespaces/{namespace}/properties.
type UpdateNamespacePropertiesRequest struct {
	Removals []string          `json:"removals,omitempty"`
	Updates  map[string]string `json:"updates,omitempty"`
}

// UpdateNamespacePropertiesResponse answers UpdateNamespacePropertiesRequest.
// Updated and Removed are required by the spec, so never omitted (send
// empty lists, not nil, which would encode as null).
type UpdateNamespacePropertiesResponse struct {
	// Updated lists the keys added or changed.
	Updated []string `json:"updated"`
	// Removed lists the removals that were present.
	Removed []string `json:"removed"`
	// Missing lists the removals that were not present. The spec makes it
	// optional and nullable, but it is never omitted: pyiceberg (0.12)
	// declares it list[str] and refuses an answer without it or with null.
	Missing []string `json:"missing"`
}
