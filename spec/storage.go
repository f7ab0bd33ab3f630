package spec

// StorageCredential is one entry of `storage-credentials`: FileIO config
// holding credentials, valid for locations under Prefix (clients pick the
// longest matching prefix).
type StorageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// LoadCredentialsResponse is the body of GET .../tables/{table}/credentials.
type LoadCredentialsResponse struct {
	StorageCredentials []StorageCredential `json:"storage-credentials"`
}

// RemoteSignRequest is the body of POST .../tables/{table}/sign: an object
// store request for the catalog to sign.
type RemoteSignRequest struct {
	Region     string              `json:"region"`
	URI        string              `json:"uri"`
	Method     string              `json:"method"`
	Headers    map[string][]string `json:"headers"`
	Properties map[string]string   `json:"properties,omitempty"`
	// Body is sent only when the signature must cover it (S3 DeleteObjects).
	Body string `json:"body,omitempty"`
	// Provider is the storage scheme ("s3" when empty).
	Provider string `json:"provider,omitempty"`
}

// RemoteSignResult answers RemoteSignRequest: the headers to send (signed
// and unsigned) with the request to URI.
type RemoteSignResult struct {
	URI     string              `json:"uri"`
	Headers map[string][]string `json:"headers"`
}
