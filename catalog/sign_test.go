package catalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
)

func signingWarehouse(t *testing.T) *catalog.Warehouse {
	t.Helper()
	wh, err := catalog.NewWarehouse("w", "s3://bkt/wh", map[string]string{
		catalog.PropS3Endpoint: "http://127.0.0.1:9000", catalog.PropS3Region: "us-east-1",
		catalog.PropS3AccessKeyID: "AKIASIGNER", catalog.PropS3SecretAccessKey: "signer-secret"})
	require.NoError(t, err)
	return wh
}

func TestSignS3RequestInsideLocation(t *testing.T) {
	wh := signingWarehouse(t)
	for _, tc := range []struct{ method, uri, body string }{
		{"GET", "http://127.0.0.1:9000/bkt/wh/t-1/metadata/00000-x.metadata.json", ""},
		{"PUT", "http://127.0.0.1:9000/bkt/wh/t-1/data/f.parquet", ""},
		{"HEAD", "http://bkt.127.0.0.1:9000/wh/t-1/data/f.parquet", ""},
		{"GET", "http://127.0.0.1:9000/bkt?list-type=2&prefix=wh/t-1/data/", ""},
		{"POST", "http://127.0.0.1:9000/bkt?delete", `<Delete><Object><Key>wh/t-1/data/a</Key></Object></Delete>`},
	} {
		res, err := wh.SignS3Request(context.Background(), "s3://bkt/wh/t-1", spec.RemoteSignRequest{
			Region: "us-east-1", URI: tc.uri, Method: tc.method, Body: tc.body,
			Headers: map[string][]string{"User-Agent": {"test"}}})
		require.NoError(t, err, tc.uri)
		auth := strings.Join(res.Headers["Authorization"], "")
		require.True(t, strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIASIGNER/"), auth)
		require.NotEmpty(t, res.Headers["X-Amz-Date"])
		require.Equal(t, []string{"test"}, res.Headers["User-Agent"])
		for _, vs := range res.Headers {
			for _, v := range vs {
				require.NotContains(t, v, "signer-secret")
			}
		}
	}
}

// A signing request for anything outside the table's location is refused
// with ErrForbidden (403): other tables, other buckets, other hosts,
// '..' escapes and bucket-wide listings.
func TestSignS3RequestOutsideLocation(t *testing.T) {
	wh := signingWarehouse(t)
	for _, tc := range []struct{ method, uri, body string }{
		{"GET", "http://127.0.0.1:9000/bkt/wh/t-2/metadata/x.json", ""},
		{"GET", "http://127.0.0.1:9000/bkt/wh/t-10/data/x", ""},
		{"GET", "http://127.0.0.1:9000/bkt/wh/t-1", ""},
		{"GET", "http://127.0.0.1:9000/other/wh/t-1/data/x", ""},
		{"GET", "http://evil.example:9000/bkt/wh/t-1/data/x", ""},
		{"GET", "http://127.0.0.1:9000/bkt/wh/t-1/../t-2/data/x", ""},
		{"GET", "http://127.0.0.1:9000/bkt?list-type=2&prefix=wh/", ""},
		{"GET", "http://127.0.0.1:9000/bkt?list-type=2", ""},
		{"DELETE", "http://127.0.0.1:9000/bkt", ""},
		{"POST", "http://127.0.0.1:9000/bkt?delete", `<Delete><Object><Key>wh/t-1/a</Key></Object><Object><Key>wh/t-2/a</Key></Object></Delete>`},
		{"POST", "http://127.0.0.1:9000/bkt?delete", ``},
	} {
		_, err := wh.SignS3Request(context.Background(), "s3://bkt/wh/t-1", spec.RemoteSignRequest{
			Region: "us-east-1", URI: tc.uri, Method: tc.method, Body: tc.body, Headers: map[string][]string{}})
		require.ErrorIs(t, err, catalog.ErrForbidden, tc.method+" "+tc.uri)
		require.NotContains(t, err.Error(), "signer-secret")
	}
}
