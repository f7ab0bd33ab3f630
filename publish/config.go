package publish

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/tarnhq/tarn/internal/strictjson"
)

// Target types.
const (
	// TypeGlue is the AWS Glue Data Catalog (glue.go).
	TypeGlue = "glue"
	// TypeIcebergREST is another Iceberg REST catalog (icebergrest.go).
	TypeIcebergREST = "iceberg-rest"
	// TypeUnity is Unity Catalog (unity.go): the Delta view of tables
	// with tarn.delta.enabled=true.
	TypeUnity = "unity"
)

// Drop modes of a target: what happens to the target's table when Tarn's
// table is dropped.
const (
	// DropRemove deletes the target's table (the default: the target
	// follows Tarn's catalog).
	DropRemove = "remove"
	// DropKeep leaves it, pointing at the last metadata published.
	DropKeep = "keep"
)

// PropPrefix prefixes the per-table opt-in/out property:
// tarn.publish.<target>=true publishes the table to the target even
// when the target's scope does not cover it, false never publishes it.
const PropPrefix = "tarn.publish."

// ErrInvalidConfig: a target's configuration is refused.
var ErrInvalidConfig = errclass.New(errclass.Internal, "invalid publish config")

// TargetConfig is one entry of the `publish` list (YAML), --publish or
// TARN_PUBLISH (a JSON list of these objects). Keys are spelt as in the
// json tags; a key the entry's type does not take is refused.
type TargetConfig struct {
	// Name names the target in status, metrics and the table property
	// tarn.publish.<name>: letters, digits, '-' and '_'.
	Name string `json:"name"`
	// Type is TypeGlue, TypeUnity or TypeIcebergREST.
	Type string `json:"type"`
	// Namespaces the target covers: every table in them and in the
	// namespaces below them ("sales" covers sales.eu.orders); a level
	// holding a dot cannot be named here (use the table property). Empty:
	// every table a topic owns.
	Namespaces []string `json:"namespaces,omitempty"`
	// Drop is DropRemove (default) or DropKeep.
	Drop string `json:"drop,omitempty"`

	// Glue: Region (else the AWS chain's: AWS_REGION, the profile);
	// Endpoint overrides the Glue endpoint (a VPC endpoint, moto);
	// CatalogID is the Data Catalog's account id (default: the caller's
	// account); RoleARN, when set, is assumed (STS AssumeRole, through
	// STSEndpoint when set) for every call; otherwise the AWS default
	// credential chain's credentials are used.
	Region      string `json:"region,omitempty"`
	Endpoint    string `json:"endpoint,omitempty"`
	CatalogID   string `json:"catalog-id,omitempty"`
	RoleARN     string `json:"role-arn,omitempty"`
	STSEndpoint string `json:"sts-endpoint,omitempty"`

	// Iceberg REST: URI is the catalog's base URI (required; the client
	// adds /v1/...); Credential is OAuth2 client credentials
	// "client_id:client_secret" exchanged at the catalog's token endpoint
	// (POST /v1/oauth/tokens), with Scope (e.g. Polaris's
	// PRINCIPAL_ROLE:ALL); Warehouse is sent to GET /v1/config, which
	// answers the prefix.
	URI        string `json:"uri,omitempty"`
	Credential string `json:"credential,omitempty"`
	Warehouse  string `json:"warehouse,omitempty"`
	Scope      string `json:"scope,omitempty"`

	// Unity: URI (above) is the server's base URI (the client adds
	// /api/2.1/unity-catalog: a Databricks workspace URL or an OSS
	// server's http://host:8080); Token is the bearer token sent with
	// every call (optional: an OSS server without auth); Catalog is the
	// Unity catalog the tables are registered in (required; it must
	// exist).
	Token   string `json:"token,omitempty"`
	Catalog string `json:"catalog,omitempty"`
}

// targetName is what a target may be called: it appears in a table
// property name and in metric labels.
var targetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// ParseTargets decodes the JSON list of --publish (the YAML key publish
// arrives as the same JSON) and validates each entry. Errors wrap
// ErrInvalidConfig and name the entry.
func ParseTargets(raw string) ([]TargetConfig, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var list []TargetConfig
	if err := strictjson.DecodeKnown([]byte(raw), &list); err != nil {
		return nil, fmt.Errorf("%w: want a JSON list of {name, type, namespaces, ...} objects: %v", ErrInvalidConfig, err)
	}
	seen := map[string]bool{}
	for i, t := range list {
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("publish target %d: %w", i, err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("%w: publish target %q is named twice", ErrInvalidConfig, t.Name)
		}
		seen[t.Name] = true
	}
	return list, nil
}

// Validate checks one target. Errors wrap ErrInvalidConfig.
func (t TargetConfig) Validate() error {
	if !targetName.MatchString(t.Name) {
		return fmt.Errorf("%w: name %q: want 1 to 63 letters, digits, '-' or '_', starting with a letter or digit", ErrInvalidConfig, t.Name)
	}
	glueKeys := t.Region != "" || t.Endpoint != "" || t.CatalogID != "" || t.RoleARN != "" || t.STSEndpoint != ""
	restKeys := t.Credential != "" || t.Warehouse != "" || t.Scope != ""
	unityKeys := t.Token != "" || t.Catalog != ""
	switch t.Type {
	case TypeGlue:
		if restKeys || unityKeys || t.URI != "" {
			return fmt.Errorf("%w: target %s: uri, credential, warehouse, scope, token and catalog are keys of types %q and %q", ErrInvalidConfig, t.Name, TypeIcebergREST, TypeUnity)
		}
	case TypeIcebergREST:
		if glueKeys || unityKeys {
			return fmt.Errorf("%w: target %s: region, endpoint, catalog-id, role-arn, sts-endpoint, token and catalog are keys of types %q and %q", ErrInvalidConfig, t.Name, TypeGlue, TypeUnity)
		}
		if err := t.validateURI(); err != nil {
			return err
		}
	case TypeUnity:
		if glueKeys || restKeys {
			return fmt.Errorf("%w: target %s: region, endpoint, catalog-id, role-arn, sts-endpoint, credential, warehouse and scope are keys of types %q and %q", ErrInvalidConfig, t.Name, TypeGlue, TypeIcebergREST)
		}
		if err := t.validateURI(); err != nil {
			return err
		}
		if t.Catalog == "" || strings.ContainsAny(t.Catalog, "./ ") {
			return fmt.Errorf("%w: target %s: catalog %q: want the name of an existing Unity catalog (no '.', '/' or space)", ErrInvalidConfig, t.Name, t.Catalog)
		}
	default:
		return fmt.Errorf("%w: target %s: unknown type %q (want %q, %q or %q)", ErrInvalidConfig, t.Name, t.Type, TypeGlue, TypeUnity, TypeIcebergREST)
	}
	if t.Drop != "" && t.Drop != DropRemove && t.Drop != DropKeep {
		return fmt.Errorf("%w: target %s: drop %q: want %q or %q", ErrInvalidConfig, t.Name, t.Drop, DropRemove, DropKeep)
	}
	for _, ns := range t.Namespaces {
		if err := catalog.Namespace(strings.Split(ns, ".")).Validate(); err != nil {
			return fmt.Errorf("%w: target %s: namespace %q: %v", ErrInvalidConfig, t.Name, ns, err)
		}
	}
	if t.STSEndpoint != "" && t.RoleARN == "" {
		return fmt.Errorf("%w: target %s: sts-endpoint is only used with role-arn", ErrInvalidConfig, t.Name)
	}
	return nil
}

// validateURI checks URI: an http(s) base URI.
func (t TargetConfig) validateURI() error {
	if u, err := url.Parse(t.URI); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: target %s: uri %q: want the catalog's http(s) base URI", ErrInvalidConfig, t.Name, t.URI)
	}
	return nil
}

// Property is the table property that opts a table in or out of this
// target: tarn.publish.<name>.
func (t TargetConfig) Property() string { return PropPrefix + t.Name }

// dropMode is Drop with its default.
func (t TargetConfig) dropMode() string {
	if t.Drop == "" {
		return DropRemove
	}
	return t.Drop
}

// Covers reports whether the target publishes table id with properties
// props: the table property tarn.publish.<name> decides when set;
// otherwise a table in (or below) one of Namespaces, or, without
// Namespaces, a table a topic owns (owned).
func (t TargetConfig) Covers(id catalog.Ident, props iceberg.Properties, owned bool) bool {
	if v, ok := props[t.Property()]; ok {
		b, err := strconv.ParseBool(v)
		return err == nil && b
	}
	if len(t.Namespaces) == 0 {
		return owned
	}
	for _, ns := range t.Namespaces {
		levels := strings.Split(ns, ".")
		if len(id.Namespace) >= len(levels) && slices.Equal(id.Namespace[:len(levels)], levels) {
			return true
		}
	}
	return false
}

// ValidateProperties checks the tarn.publish.* properties a commit sets:
// each must be true or false. (A property naming a target that is not
// configured is allowed: targets come and go with the configuration.)
func ValidateProperties(props iceberg.Properties) error {
	for k, v := range props {
		if !strings.HasPrefix(k, PropPrefix) {
			continue
		}
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%s=%q: want true or false", k, v)
		}
	}
	return nil
}
