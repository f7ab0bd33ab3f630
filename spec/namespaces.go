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
type UpdateNamespacePropertiesResponse struct {
	Updated []string `json:"updated"`
	Removed []string `json:"removed"`
	Missing []string `json:"missing,omitempty"`
}
