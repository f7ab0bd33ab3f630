package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/tarnhq/tarn/spec"
)

// Access is what a caller may do with a table's files; it scopes vended
// credentials.
type Access int

const (
	// AccessRead allows s3:GetObject and s3:ListBucket under the table's
	// location only.
	AccessRead Access = iota
	// AccessReadWrite adds writing and deleting objects there.
	AccessReadWrite
)

// CanVend reports whether VendCredentials returns credentials: STS is
// enabled (a role is configured) or the operator opted in to vending the
// static keys.
func (s *S3) CanVend() bool {
	return s.stsEnabled() || boolProp(s.props, PropVendStaticCredentials)
}

// VendCredentials returns credentials for the files under dirs (a
// table's directories inside the warehouse, Loaded.Directories), scoped
// to access: through STS
// AssumeRole with an inline session policy (SessionPolicy) when a role
// is configured, else Tarn's static keys if PropVendStaticCredentials
// says so, else nil (nothing to vend). The config also carries
// ClientConfig's keys. One storage credential is returned per directory
// (the same keys, each with its directory as prefix, which clients match
// a file's path against). The caller checks that dirs lie inside the
// warehouse. Errors: an STS failure (ErrVending, without credentials).
func (s *S3) VendCredentials(ctx context.Context, dirs []string, access Access) ([]spec.StorageCredential, error) {
	cfg := s.ClientConfig()
	switch {
	case s.stsEnabled():
		creds, err := s.assumeRole(ctx, dirs, access)
		if err != nil {
			return nil, err
		}
		cfg[PropS3AccessKeyID] = aws.ToString(creds.AccessKeyId)
		cfg[PropS3SecretAccessKey] = aws.ToString(creds.SecretAccessKey)
		cfg[PropS3SessionToken] = aws.ToString(creds.SessionToken)
		if creds.Expiration != nil {
			cfg["s3.session-token-expires-at-ms"] = strconv.FormatInt(creds.Expiration.UnixMilli(), 10)
		}
	case boolProp(s.props, PropVendStaticCredentials):
		cfg[PropS3AccessKeyID] = s.props[PropS3AccessKeyID]
		cfg[PropS3SecretAccessKey] = s.props[PropS3SecretAccessKey]
		if t := s.props[PropS3SessionToken]; t != "" {
			cfg[PropS3SessionToken] = t
		}
	default:
		return nil, nil
	}
	out := make([]spec.StorageCredential, 0, len(dirs))
	for _, d := range dirs {
		d = strings.TrimSuffix(d, "/")
		out = append(out, spec.StorageCredential{Prefix: d, Config: cfg})
		// Clients match a file's path against the prefixes: the files
		// iceberg-go writes under a location holding a space are
		// spelled percent-encoded (SessionPolicy).
		if scheme, rest, ok := strings.Cut(d, "://"); ok {
			host, p, _ := strings.Cut(rest, "/")
			if enc := scheme + "://" + host + URIEscapedPath("/"+p); enc != d {
				out = append(out, spec.StorageCredential{Prefix: enc, Config: cfg})
			}
		}
	}
	return out, nil
}

// ErrVending: credentials could not be obtained from STS (the cause is
// wrapped; it never holds a credential); the catalog cannot serve the
// load now (503).
var ErrVending = errclass.New(errclass.Unavailable, "vend credentials")

// assumeRole asks STS for credentials of the configured role, limited by
// SessionPolicy to dirs and access.
func (s *S3) assumeRole(ctx context.Context, dirs []string, access Access) (*stsCredentials, error) {
	if _, err := s.config(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrVending, err)
	}
	policy, err := SessionPolicy(dirs, access)
	if err != nil {
		return nil, err
	}
	dur := DefaultCredentialsDuration
	if v := s.props[PropCredentialsDurationSeconds]; v != "" {
		n, _ := strconv.Atoi(v) // validated by NewS3
		dur = time.Duration(n) * time.Second
	}
	name := s.props[PropS3RoleSessionName]
	if name == "" {
		name = "tarn"
	}
	in := &sts.AssumeRoleInput{
		RoleArn:         aws.String(s.props[PropS3RoleARN]),
		RoleSessionName: aws.String(name),
		Policy:          aws.String(string(policy)),
		DurationSeconds: aws.Int32(int32(dur / time.Second)),
	}
	if id := s.props[PropS3ExternalID]; id != "" {
		in.ExternalId = aws.String(id)
	}
	out, err := s.sts.AssumeRole(ctx, in)
	if err != nil {
		// The SDK's errors name the operation, status and AWS error code,
		// never the request's credentials; keep only the code and message.
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return nil, fmt.Errorf("%w: sts AssumeRole: %s: %s", ErrVending, ae.ErrorCode(), ae.ErrorMessage())
		}
		return nil, fmt.Errorf("%w: sts AssumeRole: %w", ErrVending, err)
	}
	if out.Credentials == nil {
		return nil, fmt.Errorf("%w: sts AssumeRole returned no credentials", ErrVending)
	}
	return &stsCredentials{
		AccessKeyId: out.Credentials.AccessKeyId, SecretAccessKey: out.Credentials.SecretAccessKey,
		SessionToken: out.Credentials.SessionToken, Expiration: out.Credentials.Expiration,
	}, nil
}

type stsCredentials struct {
	AccessKeyId, SecretAccessKey, SessionToken *string
	Expiration                                 *time.Time
}

// policyDocument is an IAM policy (JSON).
type policyDocument struct {
	Version   string            `json:"Version"`
	Statement []policyStatement `json:"Statement"`
}

type policyStatement struct {
	Sid       string                         `json:"Sid"`
	Effect    string                         `json:"Effect"`
	Action    []string                       `json:"Action"`
	Resource  []string                       `json:"Resource"`
	Condition map[string]map[string][]string `json:"Condition,omitempty"`
}

// SessionPolicy is the inline session policy sent with AssumeRole for a
// table whose files lie in dirs (s3://bucket/key/prefix each: its
// location, data and metadata paths, and directories it moved away from;
// Loaded.Directories, current ones first). The session gets the
// intersection of the role's policies and this one, so whatever the role
// allows, the credentials reach only objects under those directories:
//
//   - read: s3:GetObject on arn:aws:s3:::bucket/prefix/* and s3:ListBucket
//     on the bucket restricted by s3:prefix to prefix/* (which matches
//     prefix/ itself; not prefix alone, which would list sibling tables
//     that extend it);
//   - read-write adds s3:PutObject, s3:DeleteObject,
//     s3:AbortMultipartUpload and s3:ListMultipartUploadParts on the same
//     objects (one statement, so each directory is named twice in all).
//
// AWS refuses a session policy longer than MaxSessionPolicyBytes; when
// dirs would make one longer, the trailing directories (the oldest
// locations a table moved away from) are left out, so the credentials
// still reach the table's current files. A directory whose path a URI
// percent-encodes (a space) is named in both spellings: objects Java and
// pyiceberg write keep the raw key, those iceberg-go writes the encoded
// one. Errors wrap ErrInvalidArgument
// for no directory, or one that is not s3://bucket/key or holds a
// character IAM would read as a wildcard or variable.
func SessionPolicy(dirs []string, access Access) ([]byte, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: no table directory to scope credentials to", ErrInvalidArgument)
	}
	// A directory's objects may have two spellings of its key prefix:
	// the raw one (Java's and pyiceberg's FileIOs append to the location
	// as written) and the percent-encoded one (iceberg-go's location
	// provider encodes the path and its S3 FileIO keeps the key as is),
	// when the location holds a character a URI path encodes (a space).
	type dir struct {
		bucket   string
		prefixes []string
	}
	parsed := make([]dir, 0, len(dirs))
	for _, d := range dirs {
		if err := CheckLocationChars(d); err != nil {
			return nil, err
		}
		u, err := url.Parse(d)
		if err != nil || u.Scheme != "s3" || u.Host == "" {
			return nil, fmt.Errorf("%w: %q is not an s3://bucket/key location", ErrInvalidArgument, d)
		}
		prefix := strings.Trim(u.Path, "/")
		if prefix == "" {
			return nil, fmt.Errorf("%w: %q is a whole bucket, not a table location", ErrInvalidArgument, d)
		}
		pd := dir{bucket: u.Host, prefixes: []string{prefix}}
		if enc := strings.TrimPrefix(URIEscapedPath("/"+prefix), "/"); enc != prefix {
			pd.prefixes = append(pd.prefixes, enc)
		}
		parsed = append(parsed, pd)
	}
	build := func(ds []dir) ([]byte, error) {
		actions := []string{"s3:GetObject"}
		if access == AccessReadWrite {
			actions = append(actions, "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
		}
		var objects []string
		lists := map[string][]string{} // bucket -> s3:prefix values
		var order []string
		for _, d := range ds {
			if _, ok := lists[d.bucket]; !ok {
				order = append(order, d.bucket)
			}
			for _, p := range d.prefixes {
				objects = append(objects, "arn:aws:s3:::"+d.bucket+"/"+p+"/*")
				lists[d.bucket] = append(lists[d.bucket], p+"/*")
			}
		}
		doc := policyDocument{Version: "2012-10-17", Statement: []policyStatement{
			{Sid: "TableObjects", Effect: "Allow", Action: actions, Resource: objects},
		}}
		for i, b := range order {
			sid := "ListTablePrefix"
			if i > 0 {
				sid += strconv.Itoa(i + 1)
			}
			doc.Statement = append(doc.Statement, policyStatement{Sid: sid, Effect: "Allow", Action: []string{"s3:ListBucket"},
				Resource: []string{"arn:aws:s3:::" + b}, Condition: map[string]map[string][]string{"StringLike": {"s3:prefix": lists[b]}}})
		}
		return json.Marshal(doc)
	}
	for n := len(parsed); ; n-- {
		b, err := build(parsed[:n])
		if err != nil || len(b) <= MaxSessionPolicyBytes || n == 1 {
			return b, err
		}
	}
}

// MaxSessionPolicyBytes is the longest inline session policy STS
// AssumeRole takes, in characters of its JSON
// (https://docs.aws.amazon.com/STS/latest/APIReference/API_AssumeRole.html).
const MaxSessionPolicyBytes = 2048
