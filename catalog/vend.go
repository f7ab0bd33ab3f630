package catalog

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

// ClientConfig is the table `config` an engine needs to reach the
// warehouse's files, without credentials: for S3 the endpoint, region
// and addressing (both spellings of path style). Empty for file://.
func (w *Warehouse) ClientConfig() map[string]string {
	if w.s3 == nil {
		return map[string]string{}
	}
	return w.s3.clientConfig()
}

// CanVend reports whether VendCredentials returns credentials: STS is
// enabled (a role is configured) or the operator opted in to vending the
// static keys.
func (w *Warehouse) CanVend() bool {
	return w.s3 != nil && (w.s3.stsEnabled() || boolProp(w.s3.props, PropVendStaticCredentials))
}

// VendCredentials returns credentials for the files under location (a
// table's location inside the warehouse), scoped to access: through STS
// AssumeRole with an inline session policy (SessionPolicy) when a role
// is configured, else Tarn's static keys if PropVendStaticCredentials
// says so, else nil (nothing to vend). The config also carries
// ClientConfig's keys. Errors: ErrInvalidArgument for a location outside
// the warehouse; an STS failure (wrapped, without credentials).
func (w *Warehouse) VendCredentials(ctx context.Context, location string, access Access) ([]spec.StorageCredential, error) {
	if w.s3 == nil {
		return nil, nil
	}
	if err := w.checkTableLocation(location); err != nil {
		return nil, err
	}
	location = strings.TrimSuffix(location, "/")
	cfg := w.s3.clientConfig()
	switch {
	case w.s3.stsEnabled():
		creds, err := w.assumeRole(ctx, location, access)
		if err != nil {
			return nil, err
		}
		cfg[PropS3AccessKeyID] = aws.ToString(creds.AccessKeyId)
		cfg[PropS3SecretAccessKey] = aws.ToString(creds.SecretAccessKey)
		cfg[PropS3SessionToken] = aws.ToString(creds.SessionToken)
		if creds.Expiration != nil {
			cfg["s3.session-token-expires-at-ms"] = strconv.FormatInt(creds.Expiration.UnixMilli(), 10)
		}
	case boolProp(w.s3.props, PropVendStaticCredentials):
		cfg[PropS3AccessKeyID] = w.s3.props[PropS3AccessKeyID]
		cfg[PropS3SecretAccessKey] = w.s3.props[PropS3SecretAccessKey]
		if t := w.s3.props[PropS3SessionToken]; t != "" {
			cfg[PropS3SessionToken] = t
		}
	default:
		return nil, nil
	}
	return []spec.StorageCredential{{Prefix: location, Config: cfg}}, nil
}

// ErrVending: credentials could not be obtained from STS (the cause is
// wrapped; it never holds a credential).
var ErrVending = errors.New("vend credentials")

// assumeRole asks STS for credentials of the configured role, limited by
// SessionPolicy to location and access.
func (w *Warehouse) assumeRole(ctx context.Context, location string, access Access) (*stsCredentials, error) {
	if _, err := w.s3.config(ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrVending, err)
	}
	policy, err := SessionPolicy(location, access)
	if err != nil {
		return nil, err
	}
	dur := DefaultCredentialsDuration
	if v := w.s3.props[PropCredentialsDurationSeconds]; v != "" {
		n, _ := strconv.Atoi(v) // validated by newS3Store
		dur = time.Duration(n) * time.Second
	}
	name := w.s3.props[PropS3RoleSessionName]
	if name == "" {
		name = "tarn"
	}
	in := &sts.AssumeRoleInput{
		RoleArn:         aws.String(w.s3.props[PropS3RoleARN]),
		RoleSessionName: aws.String(name),
		Policy:          aws.String(string(policy)),
		DurationSeconds: aws.Int32(int32(dur / time.Second)),
	}
	if id := w.s3.props[PropS3ExternalID]; id != "" {
		in.ExternalId = aws.String(id)
	}
	out, err := w.s3.sts.AssumeRole(ctx, in)
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

// SessionPolicy is the inline session policy sent with AssumeRole for the
// table at location (s3://bucket/key/prefix). The session gets the
// intersection of the role's policies and this one, so whatever the role
// allows, the credentials reach only objects under the table's location:
//
//   - read: s3:GetObject on arn:aws:s3:::bucket/prefix/* and s3:ListBucket
//     on the bucket restricted by s3:prefix to prefix/ and prefix/* (not
//     prefix alone, which would list sibling tables that extend it);
//   - read-write adds s3:PutObject, s3:DeleteObject,
//     s3:AbortMultipartUpload and s3:ListMultipartUploadParts on
//     bucket/prefix/*.
//
// Errors wrap ErrInvalidArgument for a location that is not s3://bucket/key
// or that holds a character IAM would read as a wildcard or variable.
func SessionPolicy(location string, access Access) ([]byte, error) {
	if err := checkLocationChars(location); err != nil {
		return nil, err
	}
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, fmt.Errorf("%w: %q is not an s3://bucket/key location", ErrInvalidArgument, location)
	}
	prefix := strings.Trim(u.Path, "/")
	if prefix == "" {
		return nil, fmt.Errorf("%w: %q is a whole bucket, not a table location", ErrInvalidArgument, location)
	}
	objects := "arn:aws:s3:::" + u.Host + "/" + prefix + "/*"
	doc := policyDocument{Version: "2012-10-17", Statement: []policyStatement{
		{Sid: "ReadTableObjects", Effect: "Allow", Action: []string{"s3:GetObject"}, Resource: []string{objects}},
		{Sid: "ListTablePrefix", Effect: "Allow", Action: []string{"s3:ListBucket"}, Resource: []string{"arn:aws:s3:::" + u.Host},
			Condition: map[string]map[string][]string{"StringLike": {"s3:prefix": {prefix + "/", prefix + "/*"}}}},
	}}
	if access == AccessReadWrite {
		doc.Statement = append(doc.Statement, policyStatement{Sid: "WriteTableObjects", Effect: "Allow",
			Action:   []string{"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"},
			Resource: []string{objects}})
	}
	return json.Marshal(doc)
}
