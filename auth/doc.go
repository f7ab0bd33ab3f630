// Package auth is Tarn's identity and authorization: the OAuth2 token
// endpoint's logic (client_credentials, and token exchange for refresh),
// JWTs issued and verified with a signing key kept in the data dir
// (keys.go, tokens.go), external OIDC issuers' JWTs verified through
// their discovery document and JWKS (oidc.go), and principals → roles →
// grants of privileges on securables (store.go, authz.go).
//
// # Model
//
// A principal is a client id with a bcrypt-hashed secret (local), or a
// name with no secret that an external issuer's tokens map to. A
// principal holds roles; a role holds grants; a grant is a privilege
// (read, write, create, drop, manage) on a securable (the catalog, a
// namespace, a table or a view). A grant on a namespace applies to every
// namespace, table and view beneath it; a grant on the catalog to all.
// manage implies every other privilege and write implies read. The root
// principal (Root: true, only for tokens Tarn issued) may do anything.
//
// # Files
//
//	authz.go   privileges, securables, the Authorizer and Decision
//	store.go   principals, roles, grants in the catalog's record store
//	keys.go    the signing key (ES256, PEM in the data dir) and the JWKS
//	tokens.go  issue and verify Tarn's own JWTs
//	oidc.go    external issuers: discovery, cached JWKS, key rotation
//	service.go the token endpoint and Authenticate, composing the above
//	exchange.go who may exchange a token: its own principal, or a caller
//	           with manage on the catalog
//
// # Locks
//
// Store.mu guards the cached snapshot of principals, roles and grants;
// it is held only while reading or swapping the snapshot, never across
// a store call. Each OIDC issuer's mu guards its key set and is held
// while its JWKS is fetched (one fetch at a time per issuer). No lock of
// this package is held while another is taken.
package auth
