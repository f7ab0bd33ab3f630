package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/apache/iceberg-go/utils"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	// Registers the s3:// (and s3a://, s3n://) FileIO: gocloud's s3blob
	// over aws-sdk-go-v2, multipart uploads through the S3 transfer
	// manager, the SDK's standard retryer (3 attempts, exponential backoff
	// with jitter on throttling and 5xx).
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

// Warehouse properties for S3 warehouses. The s3.* names are the FileIO
// property names engines know (Java's S3FileIO, pyiceberg, iceberg-go);
// the rest are Tarn's own and never leave the server.
const (
	// PropS3Endpoint is the S3 endpoint URL; empty means AWS's own.
	PropS3Endpoint = "s3.endpoint"
	// PropS3Region is the bucket's region (also sent as client.region).
	PropS3Region = "s3.region"
	// PropS3PathStyleAccess selects path-style addressing
	// (http://endpoint/bucket/key) when "true". Java's name.
	PropS3PathStyleAccess = "s3.path-style-access"
	// PropS3ForceVirtualAddressing is the inverse of PropS3PathStyleAccess,
	// pyiceberg's and iceberg-go's name. Vended config carries both.
	PropS3ForceVirtualAddressing = "s3.force-virtual-addressing"
	// PropS3AccessKeyID and PropS3SecretAccessKey are explicit credentials
	// for Tarn itself; without them the standard AWS chain is used (env,
	// shared config, web identity/IRSA, instance role). Never vended unless
	// PropVendStaticCredentials is "true".
	PropS3AccessKeyID     = "s3.access-key-id"
	PropS3SecretAccessKey = "s3.secret-access-key"
	// PropS3SessionToken goes with explicit temporary credentials.
	PropS3SessionToken = "s3.session-token"
	// PropS3RoleARN is the role STS AssumeRole vends credentials of.
	PropS3RoleARN = "s3.role-arn"
	// PropS3RoleSessionName names the assumed-role sessions; "tarn" when unset.
	PropS3RoleSessionName = "s3.role-session-name"
	// PropS3ExternalID is passed to AssumeRole when set.
	PropS3ExternalID = "s3.external-id"
	// PropSTSEnabled turns vending through STS off when "false"; it
	// defaults to "true" when PropS3RoleARN is set.
	PropSTSEnabled = "sts-enabled"
	// PropSTSEndpoint overrides the STS endpoint; by default it comes from
	// the standard AWS settings (AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL,
	// shared config).
	PropSTSEndpoint = "sts.endpoint"
	// PropVendStaticCredentials, when "true" and STS is not used, vends
	// Tarn's own static keys (PropS3AccessKeyID/PropS3SecretAccessKey).
	// Off by default: the operator must opt in to sharing them.
	PropVendStaticCredentials = "vend-static-credentials"
	// PropCredentialsDurationSeconds is the lifetime asked of STS for
	// vended credentials; DefaultCredentialsDuration when unset.
	PropCredentialsDurationSeconds = "credentials-duration-seconds"
	// PropS3ConnectTimeout bounds connecting (TCP and TLS) to S3 and STS:
	// seconds or a Go duration; DefaultS3ConnectTimeout when unset.
	PropS3ConnectTimeout = "s3.connect-timeout"
	// PropS3RequestTimeout bounds the wait for a response's headers from
	// S3 or STS, per attempt (a body that is streaming is not cut off):
	// seconds or a Go duration; DefaultS3RequestTimeout when unset.
	PropS3RequestTimeout = "s3.request-timeout"
	// PropS3MaxAttempts is how many times one S3 or STS call is tried
	// (retries of throttling, 5xx and timeouts); DefaultS3MaxAttempts.
	PropS3MaxAttempts = "s3.max-attempts"
)

// Bounds on object-store calls: an endpoint that accepts connections and
// never answers fails a call after at most about
// DefaultS3MaxAttempts × DefaultS3RequestTimeout plus backoff.
const (
	DefaultS3ConnectTimeout = 10 * time.Second
	DefaultS3RequestTimeout = 30 * time.Second
	DefaultS3MaxAttempts    = 3
)

// DefaultCredentialsDuration is the lifetime of vended credentials: one
// hour, AssumeRole's default and the longest a role chain may ask for.
const DefaultCredentialsDuration = time.Hour

// minCredentialsDuration is STS's lower bound for DurationSeconds.
const minCredentialsDuration = 15 * time.Minute

// S3 is an S3 warehouse's connection: its settings, the lazily built
// AWS config shared by STS, signing and the FileIO, and the FileIO of
// the warehouse's own bucket.
type S3 struct {
	bucket   string
	location string
	props    map[string]string

	mu     sync.Mutex
	awsCfg *aws.Config
	sts    *sts.Client

	ioMu sync.Mutex
	io   icebergio.IO // the bucket's FileIO, built on first use
}

// NewS3 validates the S3 properties of a warehouse at location
// (s3://bucket[/prefix], without a trailing slash, user info, query or
// fragment: the caller checked it). Errors wrap ErrInvalidArgument; they
// never quote a credential.
func NewS3(location string, props map[string]string) (*S3, error) {
	u, err := url.Parse(location)
	if err != nil {
		return nil, fmt.Errorf("%w: location %q: %v", ErrInvalidArgument, location, err)
	}
	bucket := u.Host
	if bucket == "" {
		return nil, fmt.Errorf("%w: s3 warehouse needs a bucket (s3://bucket/prefix)", ErrInvalidArgument)
	}
	for _, k := range []string{PropS3PathStyleAccess, PropS3ForceVirtualAddressing, PropSTSEnabled, PropVendStaticCredentials} {
		if v, ok := props[k]; ok {
			if _, err := strconv.ParseBool(v); err != nil {
				return nil, fmt.Errorf("%w: warehouse property %s must be true or false, got %q", ErrInvalidArgument, k, v)
			}
		}
	}
	if (props[PropS3AccessKeyID] == "") != (props[PropS3SecretAccessKey] == "") {
		return nil, fmt.Errorf("%w: %s and %s must be set together", ErrInvalidArgument, PropS3AccessKeyID, PropS3SecretAccessKey)
	}
	if v, ok := props[PropCredentialsDurationSeconds]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || time.Duration(n)*time.Second < minCredentialsDuration || n > 43200 {
			return nil, fmt.Errorf("%w: %s must be seconds between 900 and 43200, got %q", ErrInvalidArgument, PropCredentialsDurationSeconds, v)
		}
	}
	for _, k := range []string{PropS3ConnectTimeout, PropS3RequestTimeout} {
		if v, ok := props[k]; ok {
			if _, err := parseTimeout(v); err != nil {
				return nil, fmt.Errorf("%w: warehouse property %s: %v", ErrInvalidArgument, k, err)
			}
		}
	}
	if v, ok := props[PropS3MaxAttempts]; ok {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 10 {
			return nil, fmt.Errorf("%w: warehouse property %s must be 1 to 10, got %q", ErrInvalidArgument, PropS3MaxAttempts, v)
		}
	}
	if boolProp(props, PropVendStaticCredentials) && props[PropS3AccessKeyID] == "" {
		return nil, fmt.Errorf("%w: %s needs %s and %s", ErrInvalidArgument, PropVendStaticCredentials, PropS3AccessKeyID, PropS3SecretAccessKey)
	}
	return &S3{bucket: bucket, location: location, props: props}, nil
}

// parseTimeout reads a positive duration: seconds ("30", "0.5") or a Go
// duration ("30s", "500ms").
func parseTimeout(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			return 0, fmt.Errorf("%q is not seconds or a duration", v)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q must be positive", v)
	}
	return d, nil
}

// timeouts returns the connect and request timeouts and the attempts of
// the warehouse's object-store calls (validated by NewS3).
func (s *S3) timeouts() (connect, request time.Duration, attempts int) {
	connect, request, attempts = DefaultS3ConnectTimeout, DefaultS3RequestTimeout, DefaultS3MaxAttempts
	if d, err := parseTimeout(s.props[PropS3ConnectTimeout]); err == nil {
		connect = d
	}
	if d, err := parseTimeout(s.props[PropS3RequestTimeout]); err == nil {
		request = d
	}
	if n, err := strconv.Atoi(s.props[PropS3MaxAttempts]); err == nil && n >= 1 {
		attempts = n
	}
	return connect, request, attempts
}

// httpClient is the HTTP client of every S3 and STS call: bounded
// connect, TLS handshake and response-header waits, with iceberg-go's S3
// connection pool sizes.
func (s *S3) httpClient() *awshttp.BuildableClient {
	connect, request, _ := s.timeouts()
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = connect }).
		WithTransportOptions(func(t *http.Transport) {
			t.TLSHandshakeTimeout = connect
			t.ResponseHeaderTimeout = request
			t.ExpectContinueTimeout = time.Second
			t.MaxIdleConns = 256
			t.MaxIdleConnsPerHost = 256
			t.MaxConnsPerHost = 2048
			t.IdleConnTimeout = 90 * time.Second
		})
}

func boolProp(props map[string]string, k string) bool {
	b, _ := strconv.ParseBool(props[k])
	return b
}

// pathStyle reports whether path-style addressing is used: the explicit
// s3.path-style-access, else the inverse of s3.force-virtual-addressing,
// else true with a custom endpoint (as iceberg-go decides).
func (s *S3) pathStyle() bool {
	if v, ok := s.props[PropS3PathStyleAccess]; ok {
		b, _ := strconv.ParseBool(v)
		return b
	}
	if v, ok := s.props[PropS3ForceVirtualAddressing]; ok {
		b, _ := strconv.ParseBool(v)
		return !b
	}
	return s.props[PropS3Endpoint] != ""
}

// fileIOProps are the properties iceberg-go's S3 FileIO gets: the
// warehouse's, with s3.path-style-access translated to the
// s3.force-virtual-addressing iceberg-go reads.
func (s *S3) fileIOProps() map[string]string {
	out := maps.Clone(s.props)
	out[PropS3ForceVirtualAddressing] = strconv.FormatBool(!s.pathStyle())
	return out
}

// ClientConfig is the table `config` an engine needs to reach the
// store, without any credential: endpoint, region and addressing (both
// spellings of path style).
func (s *S3) ClientConfig() map[string]string {
	out := map[string]string{
		PropS3PathStyleAccess:        strconv.FormatBool(s.pathStyle()),
		PropS3ForceVirtualAddressing: strconv.FormatBool(!s.pathStyle()),
	}
	if v := s.props[PropS3Endpoint]; v != "" {
		out[PropS3Endpoint] = v
	}
	if v := s.props[PropS3Region]; v != "" {
		out[PropS3Region] = v
		out["client.region"] = v
	}
	return out
}

// stsEnabled reports whether credentials are vended through AssumeRole.
func (s *S3) stsEnabled() bool {
	if v, ok := s.props[PropSTSEnabled]; ok {
		b, _ := strconv.ParseBool(v)
		return b && s.props[PropS3RoleARN] != ""
	}
	return s.props[PropS3RoleARN] != ""
}

// config returns the AWS config Tarn itself uses for STS, signing and
// (through fileIOContext) its S3 FileIO: region and credentials from the
// properties, else the standard chain; the bounded HTTP client and
// attempts of timeouts.
func (s *S3) config(ctx context.Context) (aws.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.awsCfg != nil {
		return *s.awsCfg, nil
	}
	var opts []func(*awsconfig.LoadOptions) error
	if r := s.props[PropS3Region]; r != "" {
		opts = append(opts, awsconfig.WithRegion(r))
	}
	if id := s.props[PropS3AccessKeyID]; id != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(id, s.props[PropS3SecretAccessKey], s.props[PropS3SessionToken])))
	}
	// The config is built once per warehouse, not per request: a
	// cancelled request context must not poison it.
	cfg, err := awsconfig.LoadDefaultConfig(context.WithoutCancel(ctx), opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	_, _, attempts := s.timeouts()
	cfg.HTTPClient = s.httpClient()
	cfg.RetryMaxAttempts = attempts
	s.awsCfg = &cfg
	s.sts = sts.NewFromConfig(cfg, func(o *sts.Options) {
		if ep := s.props[PropSTSEndpoint]; ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	return cfg, nil
}

// fileIOContext is ctx carrying config's AWS config, which iceberg-go's
// S3 FileIO takes (with the properties' region and keys laid over it)
// instead of building its own: so its calls get the bounded HTTP client
// and attempts too.
func (s *S3) fileIOContext(ctx context.Context) (context.Context, error) {
	cfg, err := s.config(ctx)
	if err != nil {
		return nil, err
	}
	return utils.WithAwsConfig(ctx, &cfg), nil
}

// FileIO returns iceberg-go's S3 FileIO for loc. The warehouse's own
// bucket's is built once (one client, one connection pool); a location
// in another bucket gets one of its own.
func (s *S3) FileIO(ctx context.Context, loc string) (icebergio.IO, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: location %q: %v", ErrInvalidArgument, loc, err)
	}
	if u.Host != s.bucket {
		fctx, err := s.fileIOContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", loc, err)
		}
		return icebergio.LoadFS(fctx, s.fileIOProps(), loc)
	}
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	if s.io == nil {
		// blobfs keeps the context it is built with for every later
		// operation: it must not be a request's. Its calls are bounded by
		// the warehouse's timeouts instead (fileIOContext).
		fctx, err := s.fileIOContext(context.Background())
		if err != nil {
			return nil, fmt.Errorf("open warehouse %s: %w", s.location, err)
		}
		fs, err := icebergio.LoadFS(fctx, s.fileIOProps(), s.location)
		if err != nil {
			return nil, fmt.Errorf("open warehouse %s: %w", s.location, err)
		}
		s.io = fs
	}
	return s.io, nil
}

// WriteNew writes data to a new object at loc with If-None-Match: *, so
// an existing object is never replaced: that is an error wrapping
// os.ErrExist (S3 answers 412). S3 acknowledges a PUT only once it is
// durable.
func (s *S3) WriteNew(ctx context.Context, loc string, data []byte) error {
	fs, err := s.FileIO(ctx, loc)
	if err != nil {
		return err
	}
	if bfs, ok := fs.(*blobfs.FileIO); ok {
		// If-None-Match: * on the PUT, so an existing object is never
		// replaced (names carry a uuid, so this only guards bugs).
		bw, err := bfs.NewWriter(ctx, loc, true, &blob.WriterOptions{IfNotExist: true})
		if err != nil {
			return err
		}
		if _, err := bw.Write(data); err != nil {
			_ = bw.Close()
			return err
		}
		if err := bw.Close(); gcerrors.Code(err) == gcerrors.FailedPrecondition {
			return fmt.Errorf("%w: %s: %w", os.ErrExist, loc, err)
		} else if err != nil {
			return err
		}
		return nil
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return fmt.Errorf("FileIO for %s cannot write", loc)
	}
	return wfs.WriteFile(loc, data)
}

// Failure describes an object-store (S3, STS) call that failed:
// the operation and a class that names the cause without any credential
// or signature: the store's error code (NoSuchBucket, AccessDenied,
// SlowDown, ...) or the transport's (connection refused, timeout, DNS
// lookup failed).
type Failure struct {
	// Op is the SDK operation (PutObject, GetObject, AssumeRole), or "".
	Op string
	// Class names the cause.
	Class string
	// Transient: the store could not be reached, timed out or throttled;
	// a retry may succeed (503). Otherwise the store answered with an
	// error (500).
	Transient bool
}

// Message is the client-facing text of f.
func (f *Failure) Message() string {
	msg := "object store error"
	if f.Op != "" {
		msg += " on " + f.Op
	}
	return msg + ": " + f.Class
}

// ClassifyError reports the object-store failure in err's chain,
// if any.
func ClassifyError(err error) (*Failure, bool) {
	if err == nil {
		return nil, false
	}
	f := &Failure{}
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		f.Op = oe.OperationName
	}
	var ae smithy.APIError
	var re *awshttp.ResponseError
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &ae) && ae.ErrorCode() != "":
		f.Class = ae.ErrorCode()
		switch f.Class {
		case "SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "ServiceUnavailable", "InternalError":
			f.Transient = true
		}
	case errors.Is(err, syscall.ECONNREFUSED):
		f.Class, f.Transient = "connection refused", true
	case errors.Is(err, syscall.ECONNRESET):
		f.Class, f.Transient = "connection reset", true
	case errors.As(err, &dns):
		f.Class, f.Transient = "DNS lookup failed", true
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		f.Class, f.Transient = "timeout", true
	case errors.As(err, &re) && re.HTTPStatusCode() != 0:
		f.Class = "HTTP " + strconv.Itoa(re.HTTPStatusCode())
		f.Transient = re.HTTPStatusCode() >= 500
	case f.Op != "":
		f.Class, f.Transient = "request failed", true
	default:
		return nil, false
	}
	if errors.Is(err, ErrVending) && f.Op == "" {
		f.Op = "AssumeRole"
	}
	return f, true
}

// LogValue keeps credentials out of logs.
func (s *S3) LogValue() slog.Value {
	return slog.GroupValue(slog.String("bucket", s.bucket), slog.String("endpoint", s.props[PropS3Endpoint]), slog.String("region", s.props[PropS3Region]))
}
