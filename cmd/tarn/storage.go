package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/strictjson"
	"github.com/tarnhq/tarn/storage"
)

// storageConfig is the object-storage configuration of `tarn serve`: the
// S3 settings of the default warehouse (--s3-*, TARN_S3_*, or the FileIO
// names s3.endpoint, ... as YAML keys) and further named warehouses
// (YAML `warehouses`, or --warehouses/TARN_WAREHOUSES as JSON).
type storageConfig struct {
	endpoint, region, roleARN, roleSessionName, stsEndpoint string
	pathStyle, forceVirtual, stsEnabled, vendStatic         optionalBool
	accessKeyID, secretAccessKey, sessionToken, externalID  secretString
	credentialsDurationSeconds                              int
	extra                                                   warehouseList
}

func (s *storageConfig) register(f *pflag.FlagSet) {
	f.StringVar(&s.endpoint, "s3-endpoint", "", "S3 endpoint URL of the default warehouse (S3-compatible stores; default AWS)")
	f.StringVar(&s.region, "s3-region", "", "S3 region of the default warehouse (default from the AWS settings)")
	f.Var(&s.pathStyle, "s3-path-style-access", "path-style S3 addressing (default true with --s3-endpoint, else false)")
	f.Var(&s.forceVirtual, "s3-force-virtual-addressing", "the inverse of --s3-path-style-access (pyiceberg's name)")
	f.Var(&s.accessKeyID, "s3-access-key-id", "access key id of Tarn's own S3 credentials (default: the standard AWS chain)")
	f.Var(&s.secretAccessKey, "s3-secret-access-key", "secret access key of Tarn's own S3 credentials (prefer TARN_S3_SECRET_ACCESS_KEY)")
	f.Var(&s.sessionToken, "s3-session-token", "session token of Tarn's own temporary S3 credentials")
	f.StringVar(&s.roleARN, "s3-role-arn", "", "role that vended credentials are assumed from (STS AssumeRole)")
	f.StringVar(&s.roleSessionName, "s3-role-session-name", "", "session name of assumed roles (default tarn)")
	f.Var(&s.externalID, "s3-external-id", "external id passed to AssumeRole")
	f.Var(&s.stsEnabled, "sts-enabled", "vend credentials through STS (default true when --s3-role-arn is set)")
	f.StringVar(&s.stsEndpoint, "sts-endpoint", "", "STS endpoint URL (default from the AWS settings, e.g. AWS_ENDPOINT_URL_STS)")
	f.Var(&s.vendStatic, "vend-static-credentials", "without STS, vend Tarn's own static S3 keys (off unless set)")
	f.IntVar(&s.credentialsDurationSeconds, "credentials-duration-seconds", 0, "lifetime of vended credentials, 900 to 43200 (default 3600)")
	f.Var(&s.extra, "warehouses", `more warehouses, a JSON (or YAML in the config file) list of {"name", "location", FileIO properties...}`)
}

// props are the default warehouse's properties from the flags.
func (s *storageConfig) props() map[string]string {
	p := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	set(storage.PropS3Endpoint, s.endpoint)
	set(storage.PropS3Region, s.region)
	set(storage.PropS3PathStyleAccess, s.pathStyle.v)
	set(storage.PropS3ForceVirtualAddressing, s.forceVirtual.v)
	set(storage.PropS3AccessKeyID, string(s.accessKeyID))
	set(storage.PropS3SecretAccessKey, string(s.secretAccessKey))
	set(storage.PropS3SessionToken, string(s.sessionToken))
	set(storage.PropS3RoleARN, s.roleARN)
	set(storage.PropS3RoleSessionName, s.roleSessionName)
	set(storage.PropS3ExternalID, string(s.externalID))
	set(storage.PropSTSEnabled, s.stsEnabled.v)
	set(storage.PropSTSEndpoint, s.stsEndpoint)
	set(storage.PropVendStaticCredentials, s.vendStatic.v)
	if s.credentialsDurationSeconds != 0 {
		p[storage.PropCredentialsDurationSeconds] = fmt.Sprint(s.credentialsDurationSeconds)
	}
	return p
}

// warehouses builds the default warehouse at location (with the flags'
// S3 settings) and the named ones. A `default` entry in the list is the
// default warehouse itself and then --warehouse must be unset.
func (s *storageConfig) warehouses(location string, locationSet bool) ([]*catalog.Warehouse, error) {
	var out []*catalog.Warehouse
	seen := map[string]bool{}
	hasDefault := false
	for _, e := range s.extra.entries {
		if e.name == catalog.DefaultWarehouse {
			if locationSet {
				return nil, fmt.Errorf("warehouses: an entry named %q and --warehouse both set the default warehouse", catalog.DefaultWarehouse)
			}
			hasDefault = true
		}
	}
	if !hasDefault {
		wh, err := catalog.NewWarehouse(catalog.DefaultWarehouse, location, s.props())
		if err != nil && locationSet {
			return nil, fmt.Errorf("--warehouse: %w", err)
		}
		if err != nil {
			return nil, err // the default location, in the data dir: the caller names --data-dir
		}
		out = append(out, wh)
		seen[catalog.DefaultWarehouse] = true
	}
	for _, e := range s.extra.entries {
		if seen[e.name] {
			return nil, fmt.Errorf("warehouses: %q is named twice", e.name)
		}
		seen[e.name] = true
		wh, err := catalog.NewWarehouse(e.name, e.location, e.props)
		if err != nil {
			return nil, fmt.Errorf("warehouses: %s: %w", e.name, err)
		}
		out = append(out, wh)
	}
	if hasDefault { // the default first: it is what the log line names
		sort.SliceStable(out, func(i, j int) bool { return out[i].Name == catalog.DefaultWarehouse })
	}
	return out, nil
}

// optionalBool is a bool flag that remembers whether it was set ("" when not).
type optionalBool struct{ v string }

func (b *optionalBool) String() string { return b.v }
func (b *optionalBool) Type() string   { return "bool" }
func (b *optionalBool) Set(s string) error {
	switch strings.ToLower(s) {
	case "true", "1":
		b.v = "true"
	case "false", "0":
		b.v = "false"
	default:
		return fmt.Errorf("want true or false, got %q", s)
	}
	return nil
}

// IsBoolFlag lets `--sts-enabled` stand for `--sts-enabled=true`.
func (b *optionalBool) IsBoolFlag() bool { return true }

// secretString is a credential flag: it never prints its value (help,
// errors, logs).
type secretString string

func (s *secretString) String() string {
	if *s == "" {
		return ""
	}
	return "***"
}
func (s *secretString) Type() string       { return "string" }
func (s *secretString) Set(v string) error { *s = secretString(v); return nil }

// warehouseKeys are the properties a `warehouses` entry may set besides
// name and location; any other key is refused at startup.
var warehouseKeys = []string{
	storage.PropS3Endpoint, storage.PropS3Region, storage.PropS3PathStyleAccess, storage.PropS3ForceVirtualAddressing,
	storage.PropS3AccessKeyID, storage.PropS3SecretAccessKey, storage.PropS3SessionToken,
	storage.PropS3RoleARN, storage.PropS3RoleSessionName, storage.PropS3ExternalID,
	storage.PropSTSEnabled, storage.PropSTSEndpoint, storage.PropVendStaticCredentials, storage.PropCredentialsDurationSeconds,
	storage.PropS3ConnectTimeout, storage.PropS3RequestTimeout, storage.PropS3MaxAttempts,
}

// warehouseKeyAliases: sts-endpoint is the flag's spelling of sts.endpoint.
var warehouseKeyAliases = map[string]string{"sts-endpoint": storage.PropSTSEndpoint}

// warehouseList is the --warehouses flag: a JSON list of objects with
// "name", "location" and FileIO properties (values of any scalar type).
type warehouseList struct {
	raw     string
	entries []warehouseEntry
}

type warehouseEntry struct {
	name, location string
	props          map[string]string
}

// String does not echo the list: its properties may hold credentials.
func (w *warehouseList) String() string {
	if w.raw == "" {
		return ""
	}
	return fmt.Sprintf("[%d warehouses]", len(w.entries))
}
func (w *warehouseList) Type() string { return "json" }
func (w *warehouseList) Set(v string) error {
	var list []map[string]any
	if err := strictjson.Decode([]byte(v), &list); err != nil {
		return fmt.Errorf("want a JSON list of warehouse objects: %v", err)
	}
	var entries []warehouseEntry
	for i, m := range list {
		e := warehouseEntry{props: map[string]string{}}
		for k, val := range m {
			switch val.(type) {
			case map[string]any, []any:
				return fmt.Errorf("warehouse %d: %s must be a scalar", i, k)
			}
			sv := fmt.Sprint(val)
			switch k {
			case "name":
				e.name = sv
			case "location":
				e.location = sv
			default:
				if alias, ok := warehouseKeyAliases[k]; ok {
					k = alias
				}
				if !slices.Contains(warehouseKeys, k) {
					return fmt.Errorf("warehouse %d: unknown key %q (known: name, location, %s, sts-endpoint)", i, k, strings.Join(warehouseKeys, ", "))
				}
				if _, dup := e.props[k]; dup {
					return fmt.Errorf("warehouse %d: %s is given twice", i, k)
				}
				e.props[k] = sv
			}
		}
		if e.name == "" || e.location == "" {
			return fmt.Errorf("warehouse %d needs a name and a location", i)
		}
		if strings.ContainsAny(e.name, "/ ") {
			return fmt.Errorf("warehouse %d: name %q must not contain '/' or spaces (it is the REST prefix)", i, e.name)
		}
		entries = append(entries, e)
	}
	w.raw, w.entries = v, entries
	return nil
}
