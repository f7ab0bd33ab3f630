// Package testmoto connects tests to an S3- and STS-compatible moto server
// (scripts/moto.sh). Tests that need one call Endpoint, which skips unless
// TARN_TEST_S3_ENDPOINT names a running server:
//
//	eval "$(scripts/moto.sh start)"
//	TARN_TEST_S3_ENDPOINT=$MOTO_ENDPOINT go test ./...
//	scripts/moto.sh stop "$MOTO_DIR"
//
// moto accepts any access key and does not enforce IAM or session
// policies; the scoping of vended credentials is asserted on the policy
// document (storage.SessionPolicy) instead.
package testmoto

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/uuid"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/storage"
)

// EnvEndpoint names the moto endpoint (http://127.0.0.1:PORT).
const EnvEndpoint = "TARN_TEST_S3_ENDPOINT"

// Static test credentials for Tarn itself; moto accepts any.
const (
	AccessKeyID     = "AKIATARNTEST"
	SecretAccessKey = "tarn-test-secret-do-not-log"
	Region          = "us-east-1"
	// RoleARN is the role vended credentials are assumed from; moto
	// answers AssumeRole for any ARN of this shape.
	RoleARN = "arn:aws:iam::123456789012:role/tarn-vend"
)

// Endpoint returns the moto endpoint, or skips t when none is configured.
func Endpoint(t testing.TB) string {
	t.Helper()
	return testenv.OptIn(t, EnvEndpoint, "start scripts/moto.sh")
}

// Props are warehouse properties for the moto at endpoint with static
// keys, path-style addressing and the region above.
func Props(endpoint string) map[string]string {
	return map[string]string{
		storage.PropS3Endpoint: endpoint, storage.PropS3Region: Region, storage.PropS3PathStyleAccess: "true",
		storage.PropS3AccessKeyID: AccessKeyID, storage.PropS3SecretAccessKey: SecretAccessKey,
	}
}

// Client is an S3 client of the moto at endpoint.
func Client(endpoint string) *s3.Client {
	return s3.New(s3.Options{Region: Region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, "")})
}

// NewBucket creates a fresh bucket and returns its name.
func NewBucket(t testing.TB, endpoint string) string {
	t.Helper()
	name := "tarn-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
	if _, err := Client(endpoint).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// Warehouse returns an S3 warehouse named name in a fresh bucket
// (s3://bucket/wh) of the moto at endpoint, with props added to Props.
func Warehouse(t testing.TB, endpoint, name string, props map[string]string) *catalog.Warehouse {
	t.Helper()
	p := Props(endpoint)
	for k, v := range props {
		p[k] = v
	}
	wh, err := catalog.NewWarehouse(name, "s3://"+NewBucket(t, endpoint)+"/wh", p)
	if err != nil {
		t.Fatal(err)
	}
	return wh
}

// Keys lists the keys under prefix in bucket.
func Keys(t testing.TB, endpoint, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(Client(endpoint), &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// ClientWith is an S3 client of the moto at endpoint with the given keys.
func ClientWith(endpoint, id, secret, token string) *s3.Client {
	return s3.New(s3.Options{Region: Region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(id, secret, token)})
}

// Put writes an object.
func Put(ctx context.Context, c *s3.Client, bucket, key string, data []byte) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	return err
}

// Get reads an object.
func Get(ctx context.Context, c *s3.Client, bucket, key string) ([]byte, error) {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}
