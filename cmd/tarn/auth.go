package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/internal/strictjson"
)

// Auth modes of --auth.
const (
	authNone   = "none"
	authOAuth2 = "oauth2"
)

// rootCredentialEnv holds id:secret of the root principal; it is not a
// flag so that the secret never shows in a process listing.
const rootCredentialEnv = "TARN_ROOT_CREDENTIAL"

// defaultRootID names the root principal when it is generated.
const defaultRootID = "root"

// authConfig is the auth and TLS part of `tarn serve`.
type authConfig struct {
	mode           string
	insecureNoAuth bool
	tlsCert        string
	tlsKey         string
	issuer         string
	tokenLifetime  time.Duration
	publicMetrics  bool
	oidcIssuer     string
	oidcAudience   string
	oidcPrincipal  string
	oidcRoles      string
	oidcIssuers    oidcIssuerList
}

func (a *authConfig) register(f *pflag.FlagSet) {
	f.StringVar(&a.mode, "auth", authNone, "none (loopback only unless --insecure-no-auth) or oauth2 (bearer tokens on every /v1 and /management route)")
	f.BoolVar(&a.insecureNoAuth, "insecure-no-auth", false, "allow --auth none on a non-loopback --listen: anyone who reaches the port may read and drop every table")
	f.StringVar(&a.tlsCert, "tls-cert", "", "PEM certificate (chain) to serve HTTPS with; needs --tls-key")
	f.StringVar(&a.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&a.issuer, "auth-issuer", auth.DefaultIssuer, "iss of the tokens Tarn issues")
	f.DurationVar(&a.tokenLifetime, "auth-token-lifetime", auth.DefaultTokenLifetime, "lifetime of issued tokens (at least 10s)")
	f.BoolVar(&a.publicMetrics, "auth-public-metrics", false, "serve /metrics without a token in oauth2 mode")
	f.StringVar(&a.oidcIssuer, "oidc-issuer", "", "external OpenID Connect issuer URL whose JWTs are accepted (discovery and JWKS)")
	f.StringVar(&a.oidcAudience, "oidc-audience", "", "required aud of --oidc-issuer's tokens (not checked when empty)")
	f.StringVar(&a.oidcPrincipal, "oidc-principal-claim", auth.DefaultPrincipalClaim, "claim of --oidc-issuer's tokens that names the principal")
	f.StringVar(&a.oidcRoles, "oidc-roles-claim", "", "claim of --oidc-issuer's tokens listing role names (none when empty)")
	f.Var(&a.oidcIssuers, "oidc-issuers", `more external OpenID Connect issuers, a JSON (or YAML in the config file) list of {"issuer", "audience", "principal-claim", "roles-claim", "principal-prefix"}`)
}

// validate checks the mode against the listen address: no auth only on
// loopback unless the operator insists.
func (a authConfig) validate(listen string) error {
	switch a.mode {
	case "", authNone:
		if !a.insecureNoAuth && !isLoopback(listen) {
			return fmt.Errorf("--auth none on %s would let anyone who reaches it read and drop every table: listen on loopback, use --auth oauth2, or pass --insecure-no-auth", listen)
		}
		if a.oidcIssuer != "" || len(a.oidcIssuers) > 0 {
			return errors.New("--oidc-issuer and --oidc-issuers need --auth oauth2")
		}
	case authOAuth2:
		if a.insecureNoAuth {
			return errors.New("--insecure-no-auth contradicts --auth oauth2")
		}
	default:
		return fmt.Errorf("--auth must be none or oauth2, got %q", a.mode)
	}
	if (a.tlsCert == "") != (a.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	return nil
}

// isLoopback reports whether addr (host:port) binds only loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// service opens the auth service of oauth2 mode (nil for none): the
// signing key in dataDir, the store over the catalog's records, and the
// root principal from TARN_ROOT_CREDENTIAL or, when no root exists yet,
// generated and printed once to out (never logged).
func (a authConfig) service(ctx context.Context, dataDir string, store auth.RecordStore, out io.Writer) (*auth.Service, error) {
	if a.mode != authOAuth2 {
		return nil, nil
	}
	key, err := auth.LoadOrCreateKey(ctx, store, dataDir)
	if err != nil {
		return nil, err
	}
	st := auth.NewStore(store, 0)
	rootID, secret := defaultRootID, ""
	if v, ok := os.LookupEnv(rootCredentialEnv); ok && v != "" {
		id, s, ok := strings.Cut(v, ":")
		if !ok || id == "" || s == "" {
			return nil, fmt.Errorf("%s must be id:secret", rootCredentialEnv)
		}
		rootID, secret = id, s
	}
	generated, isNew, err := st.EnsureRoot(ctx, rootID, secret)
	if err != nil {
		return nil, fmt.Errorf("root credential: %w", err)
	}
	if isNew {
		fmt.Fprintf(out, "tarn: generated the root credential; it is shown only now, store it (e.g. as %s):\n%s:%s\n", rootCredentialEnv, rootID, generated)
	}
	cfg := auth.Config{Store: st, Key: key, Issuer: a.issuer, TokenLifetime: a.tokenLifetime}
	if a.oidcIssuer != "" {
		cfg.OIDC = []auth.OIDCConfig{{Issuer: a.oidcIssuer, Audience: a.oidcAudience, PrincipalClaim: a.oidcPrincipal, RolesClaim: a.oidcRoles}}
	}
	cfg.OIDC = append(cfg.OIDC, a.oidcIssuers...)
	return auth.NewService(cfg)
}

// oidcIssuerList is the --oidc-issuers flag: a JSON list of objects with
// "issuer" (required), "audience", "principal-claim", "roles-claim" and
// "principal-prefix" (auth.OIDCConfig); unknown keys are refused.
type oidcIssuerList []auth.OIDCConfig

func (l *oidcIssuerList) String() string {
	if len(*l) == 0 {
		return ""
	}
	return fmt.Sprintf("[%d issuers]", len(*l))
}
func (l *oidcIssuerList) Type() string { return "json" }
func (l *oidcIssuerList) Set(v string) error {
	var entries []struct {
		Issuer          string `json:"issuer"`
		Audience        string `json:"audience"`
		PrincipalClaim  string `json:"principal-claim"`
		RolesClaim      string `json:"roles-claim"`
		PrincipalPrefix string `json:"principal-prefix"`
	}
	if err := strictjson.DecodeKnown([]byte(v), &entries); err != nil {
		return fmt.Errorf(`want a JSON list of {"issuer", "audience", "principal-claim", "roles-claim", "principal-prefix"}: %v`, err)
	}
	out := make(oidcIssuerList, 0, len(entries))
	for i, e := range entries {
		if e.Issuer == "" {
			return fmt.Errorf("issuer %d: \"issuer\" is required", i)
		}
		out = append(out, auth.OIDCConfig{Issuer: e.Issuer, Audience: e.Audience, PrincipalClaim: e.PrincipalClaim,
			RolesClaim: e.RolesClaim, PrincipalPrefix: e.PrincipalPrefix})
	}
	*l = out
	return nil
}

// listener wraps l in TLS when a certificate is configured.
func (a authConfig) listener(l net.Listener) (net.Listener, error) {
	if a.tlsCert == "" {
		return l, nil
	}
	cert, err := tls.LoadX509KeyPair(a.tlsCert, a.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	return tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), nil
}

// modeName is the mode as logged ("none" for the zero value tarn demo
// passes).
func (a authConfig) modeName() string {
	if a.mode == "" {
		return authNone
	}
	return a.mode
}
