package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testenv"
)

// motoS3 is an S3 warehouse in a fresh bucket of the moto server named
// by TARN_TEST_S3_ENDPOINT (internal/testmoto cannot be imported here:
// it imports catalog, which imports storage), reached through endpoint
// (moto itself or a proxy in front of it).
func motoS3(t *testing.T, endpoint string) *S3 {
	t.Helper()
	moto := testenv.OptIn(t, "TARN_TEST_S3_ENDPOINT", "start scripts/moto.sh")
	if endpoint == "" {
		endpoint = moto
	}
	bucket := "tarn-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(moto), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIATEST", "test-secret", "")})
	_, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	wh, err := NewS3("s3://"+bucket+"/wh", map[string]string{PropS3Endpoint: endpoint, PropS3Region: "us-east-1",
		PropS3AccessKeyID: "AKIATEST", PropS3SecretAccessKey: "test-secret"})
	require.NoError(t, err)
	return wh
}

// readS3 is the content of the object at loc, read through wh's FileIO.
func readS3(ctx context.Context, wh *S3, loc string) ([]byte, error) {
	fs, err := wh.FileIO(ctx, loc)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// A data file larger than one part goes up as a multipart upload and
// reads back intact; metadata files are never overwritten.
func TestS3LargeFileAndConditionalWrite(t *testing.T) {
	var mu sync.Mutex
	var multipart int
	var proxy *httptest.Server
	moto := os.Getenv("TARN_TEST_S3_ENDPOINT")
	if moto != "" {
		u, err := url.Parse(moto)
		require.NoError(t, err)
		rp := httputil.NewSingleHostReverseProxy(u)
		proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Has("uploads") {
				mu.Lock()
				multipart++
				mu.Unlock()
			}
			rp.ServeHTTP(w, r)
		}))
		t.Cleanup(proxy.Close)
	}
	endpoint := ""
	if proxy != nil {
		endpoint = proxy.URL
	}
	wh := motoS3(t, endpoint)
	ctx := context.Background()
	fs, err := wh.FileIO(ctx, wh.location+"/t/data/big.parquet")
	require.NoError(t, err)
	big := make([]byte, 24<<20)
	_, _ = rand.Read(big)
	fw, err := fs.(icebergio.WriteFileIO).Create(wh.location + "/t/data/big.parquet")
	require.NoError(t, err)
	_, err = io.Copy(fw, bytes.NewReader(big))
	require.NoError(t, err)
	require.NoError(t, fw.Close())
	got, err := readS3(ctx, wh, wh.location+"/t/data/big.parquet")
	require.NoError(t, err)
	require.True(t, bytes.Equal(big, got), "read back %d bytes", len(got))
	mu.Lock()
	require.GreaterOrEqual(t, multipart, 1, "a 24 MiB file is a multipart upload")
	mu.Unlock()

	loc := wh.location + "/t/metadata/00001-x.metadata.json"
	require.NoError(t, wh.WriteNew(ctx, loc, []byte(`{"a":1}`)))
	require.ErrorIs(t, wh.WriteNew(ctx, loc, []byte(`{"a":2}`)), os.ErrExist, "an existing metadata file is not replaced")
	b, err := readS3(ctx, wh, loc)
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(b))
}

// Throttling (503 SlowDown) and 5xx are retried with backoff: a proxy in
// front of moto fails the first attempt of every request once.
func TestS3RetriesThrottlingAnd5xx(t *testing.T) {
	moto := testenv.OptIn(t, "TARN_TEST_S3_ENDPOINT", "start scripts/moto.sh")
	u, err := url.Parse(moto)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	seen := map[string]bool{}
	failed := 0
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.Method + " " + r.URL.String()
		mu.Lock()
		first := !seen[k]
		seen[k] = true
		if first {
			failed++
		}
		n := failed
		mu.Unlock()
		if first {
			if n%2 == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, `<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
			} else {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, `<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>`)
			}
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	wh := motoS3(t, proxy.URL)
	ctx := context.Background()
	loc := wh.location + "/t/metadata/00000-r.metadata.json"
	require.NoError(t, wh.WriteNew(ctx, loc, []byte(`{"retried":true}`)))
	b, err := readS3(ctx, wh, loc)
	require.NoError(t, err)
	require.Equal(t, `{"retried":true}`, string(b))
	fs, err := wh.FileIO(ctx, loc)
	require.NoError(t, err)
	require.NoError(t, fs.Remove(loc))
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, failed, 3, "each request failed once and was retried")
}
