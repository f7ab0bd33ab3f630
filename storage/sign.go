package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/tarnhq/tarn/spec"
)

// ErrSignOutsideLocation: a remote signing request names an object outside
// the table's location, or a host that is not the warehouse's store (403).
var ErrSignOutsideLocation = errclass.New(ErrForbidden, "request outside the table's location")

// unsignedPayload is S3's payload hash for a body the signature does not cover.
const unsignedPayload = "UNSIGNED-PAYLOAD"

// Sign signs req with SigV4 and Tarn's own credentials, after
// checking that it addresses the warehouse's store and only objects under
// the table's directories dirs (catalog.Loaded.Directories, which the
// caller checked lie inside the warehouse): an object request's
// key, a ListObjects request's prefix parameter, or every key of a
// DeleteObjects body. Anything else (another
// host, bucket or prefix, a bucket-level request of another kind) is
// ErrSignOutsideLocation (403). The result's headers are the request's
// plus Authorization, X-Amz-Date, X-Amz-Content-Sha256 and, for
// temporary credentials, X-Amz-Security-Token. Errors: ErrInvalidArgument
// for a malformed request.
func (s *S3) Sign(ctx context.Context, dirs []string, req spec.RemoteSignRequest) (*spec.RemoteSignResult, error) {
	if req.Provider != "" && req.Provider != "s3" {
		return nil, errclass.Errorf(ErrInvalidArgument, "provider %q is not supported (only s3)", req.Provider)
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete:
	default:
		return nil, errclass.Errorf(ErrInvalidArgument, "method %q cannot be signed", req.Method)
	}
	u, err := url.Parse(req.URI)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errclass.Errorf(ErrInvalidArgument, "uri %q is not an http(s) URL", req.URI)
	}
	if err := s.checkSignTarget(u, req, dirs); err != nil {
		return nil, err
	}
	cfg, err := s.config(ctx)
	if err != nil {
		return nil, err
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("retrieve signing credentials: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URI, nil)
	if err != nil {
		return nil, errclass.Errorf(ErrInvalidArgument, "uri %q: %v", req.URI, err)
	}
	for k, vs := range req.Headers {
		switch strings.ToLower(k) {
		case "authorization", "x-amz-date", "x-amz-security-token", "host":
			continue // set by the signer
		}
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	payload := hr.Header.Get("X-Amz-Content-Sha256")
	if bodyChecked(req) {
		// The keys checked are those of req.Body: the signature must
		// cover exactly that body, or a client could have a different
		// one (naming other tables' objects) signed under the checked
		// one's name. S3 verifies the body against this hash.
		sum := sha256.Sum256([]byte(req.Body))
		if want := hex.EncodeToString(sum[:]); payload != "" && payload != want {
			return nil, errclass.Errorf(ErrSignOutsideLocation, "X-Amz-Content-Sha256 %q is not the hash of the body that was checked", payload)
		}
		payload = ""
	}
	if payload == "" {
		if req.Body != "" {
			sum := sha256.Sum256([]byte(req.Body))
			payload = hex.EncodeToString(sum[:])
		} else {
			payload = unsignedPayload
		}
		hr.Header.Set("X-Amz-Content-Sha256", payload)
	}
	region := s.props[PropS3Region]
	if region == "" {
		region = req.Region
	}
	if region == "" {
		region = cfg.Region
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(ctx, creds, hr, payload, "s3", region, time.Now()); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	out := &spec.RemoteSignResult{URI: req.URI, Headers: map[string][]string{}}
	for k, vs := range hr.Header {
		out.Headers[k] = vs
	}
	return out, nil
}

// signQueryParams are the query parameters a signed request may carry:
// those Iceberg's S3FileIO (AWS SDK v2), pyiceberg (pyarrow, s3fs) and
// iceberg-go send for GetObject, HeadObject, PutObject, DeleteObject,
// multipart uploads, ListObjectsV2 and DeleteObjects. Any other (a
// sub-resource such as ?acl, ?tagging, ?restore, ?select, ?versioning,
// ?policy, or versionId, which the vended session policy does not allow
// either) is refused, as is any parameter given twice.
var signQueryParams = map[string]bool{
	"x-id": true,
	// object level: multipart uploads
	"uploads": true, "uploadId": true, "partNumber": true,
	// bucket level: ListObjectsV2, DeleteObjects
	"list-type": true, "prefix": true, "continuation-token": true, "delimiter": true,
	"max-keys": true, "start-after": true, "encoding-type": true, "fetch-owner": true,
	"delete": true,
}

// bodyChecked reports whether checkSignTarget decided on req's body (a
// DeleteObjects request): the signature must then bind that body.
func bodyChecked(req spec.RemoteSignRequest) bool {
	u, err := url.Parse(req.URI)
	return err == nil && req.Method == http.MethodPost && u.Query().Has("delete")
}

// signObjectParams are those of signQueryParams allowed on an object
// (not bucket-level) request.
var signObjectParams = map[string]bool{"x-id": true, "uploads": true, "uploadId": true, "partNumber": true}

// headerCopySource is S3's CopyObject / UploadPartCopy source header.
const headerCopySource = "x-amz-copy-source"

// checkSignTarget refuses a request that is not for the warehouse's store
// or not confined to the table's directories: its URI's bucket and key, its query
// parameters (signQueryParams), a copy source header (the source must lie
// inside the table's location too) and canned ACL headers. It fails
// closed: a request shape it does not understand is refused.
func (s *S3) checkSignTarget(u *url.URL, req spec.RemoteSignRequest, dirs []string) error {
	bucket, key, err := s.bucketKey(u)
	if err != nil {
		return err
	}
	inside := func(k string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return keyInside(bucket, k, d) })
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return errclass.Errorf(ErrSignOutsideLocation, "%s: query cannot be checked: %v", req.URI, err)
	}
	for name, vs := range q {
		allowed := signQueryParams
		if key != "" {
			allowed = signObjectParams
		}
		if !allowed[name] {
			return errclass.Errorf(ErrSignOutsideLocation, "%s: query parameter %q is not allowed", req.URI, name)
		}
		if len(vs) > 1 {
			return errclass.Errorf(ErrSignOutsideLocation, "%s: query parameter %q is repeated", req.URI, name)
		}
	}
	if err := checkSignHeaders(req, bucket, key, inside); err != nil {
		return err
	}
	if key != "" {
		if !inside(key) {
			return errclass.Errorf(ErrSignOutsideLocation, "%s is outside the table's location", req.URI)
		}
		return nil
	}
	switch {
	case (req.Method == http.MethodGet || req.Method == http.MethodHead) && q.Has("prefix") && !q.Has("delete") && !q.Has("uploads"):
		// The table's directory itself ("<location>/") or anything
		// inside it; "<location>" without the slash would also list
		// sibling tables whose names extend it (t and t2).
		p := q.Get("prefix")
		isDir := strings.HasSuffix(p, "/") && slices.ContainsFunc(dirs, func(d string) bool { return SameLocation("s3://"+bucket+"/"+p, d) })
		if isDir || inside(p) {
			return nil
		}
	case req.Method == http.MethodPost && q.Has("delete"):
		var del struct {
			Objects []struct {
				Key string `xml:"Key"`
			} `xml:"Object"`
		}
		if err := xml.Unmarshal([]byte(req.Body), &del); err != nil || len(del.Objects) == 0 {
			return errclass.Errorf(ErrSignOutsideLocation, "DeleteObjects without a readable body cannot be checked")
		}
		for _, o := range del.Objects {
			if !inside(o.Key) {
				return errclass.Errorf(ErrSignOutsideLocation, "DeleteObjects names %q, outside the table's location", o.Key)
			}
		}
		return nil
	}
	return errclass.Errorf(ErrSignOutsideLocation, "%s %s is a bucket-level request outside the table's location", req.Method, req.URI)
}

// checkSignHeaders checks the headers that widen what a signed request
// does: x-amz-copy-source (CopyObject, UploadPartCopy) must name one
// object inside the table's location, on a PUT of an object; x-amz-acl
// may only keep objects private; x-amz-grant-*, object lock and website
// redirects are refused (x-amz-tagging is allowed: Java's S3FileIO sends
// it for s3.write.tags.*).
func checkSignHeaders(req spec.RemoteSignRequest, bucket, key string, inside func(string) bool) error {
	for name, vs := range req.Headers {
		lname := strings.ToLower(name)
		switch {
		case lname == headerCopySource:
			if req.Method != http.MethodPut || key == "" || len(vs) != 1 {
				return errclass.Errorf(ErrSignOutsideLocation, "%s: only one copy source, on a PUT of an object, can be signed", headerCopySource)
			}
			if !copySourceInside(vs[0], bucket, inside) {
				return errclass.Errorf(ErrSignOutsideLocation, "%s %q is outside the table's location", headerCopySource, vs[0])
			}
		case strings.HasPrefix(lname, headerCopySource+"-if-"), lname == headerCopySource+"-range":
		case strings.HasPrefix(lname, headerCopySource):
			// x-amz-copy-source-server-side-encryption-customer-* and any
			// later variant: not something Iceberg sends.
			return errclass.Errorf(ErrSignOutsideLocation, "header %s cannot be signed", name)
		case lname == "x-amz-acl":
			for _, v := range vs {
				switch strings.TrimSpace(v) {
				case "private", "bucket-owner-full-control", "bucket-owner-read":
				default:
					return errclass.Errorf(ErrSignOutsideLocation, "x-amz-acl %q cannot be signed", v)
				}
			}
		case strings.HasPrefix(lname, "x-amz-grant-"), lname == "x-amz-website-redirect-location",
			strings.HasPrefix(lname, "x-amz-object-lock-"), lname == "x-amz-bypass-governance-retention":
			// Grants widen access; a website redirect sends readers of
			// the bucket's website elsewhere; object lock would keep
			// the catalog's own expiry and purge from deleting files.
			// Iceberg's FileIOs send none of them.
			return errclass.Errorf(ErrSignOutsideLocation, "header %s cannot be signed", name)
		}
	}
	return nil
}

// copySourceInside reports whether an x-amz-copy-source value
// ("[/]bucket/key[?versionId=v]", URL-encoded) names an object of bucket
// inside the table's location. An access point or ARN source, a version
// (the session policy does not allow s3:GetObjectVersion) or a key that
// does not decode is not.
func copySourceInside(v, bucket string, inside func(string) bool) bool {
	v = strings.TrimSpace(v)
	if strings.Contains(v, "?") {
		return false
	}
	dec, err := url.PathUnescape(v)
	if err != nil || strings.HasPrefix(dec, "arn:") {
		return false
	}
	b, k, ok := strings.Cut(strings.TrimPrefix(dec, "/"), "/")
	return ok && b == bucket && k != "" && inside(k)
}

// keyInside reports whether object key of bucket lies strictly inside
// tableLocation: no '.' or '..' segment (raw, or once more decoded as
// ParseLocation does), and the table's location as a prefix.
func keyInside(bucket, key, tableLocation string) bool {
	for _, seg := range strings.Split(key, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	loc := "s3://" + bucket + "/" + key
	if _, err := ParseLocation(loc); err != nil {
		return false
	}
	return Within(loc, tableLocation)
}

// bucketKey splits an S3 request URL into bucket and (decoded) key,
// accepting path-style (host is the endpoint, path /bucket/key) and
// virtual-hosted style (host is bucket.<endpoint host>). The host must be
// the configured endpoint's, or AWS's S3 when none is configured.
func (s *S3) bucketKey(u *url.URL) (bucket, key string, err error) {
	host := strings.ToLower(u.Hostname())
	var endpointHost string
	if ep := s.props[PropS3Endpoint]; ep != "" {
		eu, err := url.Parse(ep)
		if err != nil {
			return "", "", fmt.Errorf("%w: %s is not a URL", ErrInvalidArgument, PropS3Endpoint)
		}
		endpointHost = strings.ToLower(eu.Host)
		if strings.ToLower(u.Host) == endpointHost {
			return splitPathStyle(u)
		}
		if strings.HasSuffix(strings.ToLower(u.Host), "."+endpointHost) {
			return strings.TrimSuffix(strings.ToLower(u.Host), "."+endpointHost), strings.TrimPrefix(u.Path, "/"), nil
		}
		return "", "", errclass.Errorf(ErrSignOutsideLocation, "host %s is not the warehouse's S3 endpoint", u.Host)
	}
	// AWS: path style on an S3 service host, or virtual-hosted style on
	// the warehouse bucket's own label in front of one. Any other name
	// under amazonaws.com (another bucket's label, an access point,
	// "bkt.victim.s3...") is refused.
	switch {
	case awsS3Host.MatchString(host):
		return splitPathStyle(u)
	case strings.HasPrefix(host, s.bucket+".") && awsS3Host.MatchString(strings.TrimPrefix(host, s.bucket+".")):
		return s.bucket, strings.TrimPrefix(u.Path, "/"), nil
	}
	return "", "", errclass.Errorf(ErrSignOutsideLocation, "host %s is not AWS S3's endpoint for bucket %s", u.Host, s.bucket)
}

// awsS3Host matches AWS S3's service host names: s3.amazonaws.com,
// s3.<region>.amazonaws.com, s3-<region>.amazonaws.com (legacy),
// s3.dualstack.<region>.amazonaws.com and s3-fips.<region>..., in the
// .com and China (.com.cn) partitions
// (https://docs.aws.amazon.com/general/latest/gr/s3.html).
var awsS3Host = regexp.MustCompile(`^s3(-fips)?(\.dualstack)?([.-][a-z0-9-]+)?\.amazonaws\.com(\.cn)?$`)

func splitPathStyle(u *url.URL) (string, string, error) {
	p := strings.TrimPrefix(u.Path, "/")
	bucket, key, _ := strings.Cut(p, "/")
	return bucket, key, nil
}
