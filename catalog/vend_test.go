package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
)

// moto does not enforce IAM or session policies, so the document Tarn
// sends to STS is what proves the scoping: asserted here statement by
// statement.
func TestSessionPolicyReadOnly(t *testing.T) {
	b, err := catalog.SessionPolicy([]string{"s3://bkt/wh/sales/orders-abc"}, catalog.AccessRead)
	require.NoError(t, err)
	require.JSONEq(t, `{"Version":"2012-10-17","Statement":[
	 {"Sid":"TableObjects","Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::bkt/wh/sales/orders-abc/*"]},
	 {"Sid":"ListTablePrefix","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::bkt"],
	  "Condition":{"StringLike":{"s3:prefix":["wh/sales/orders-abc/*"]}}}]}`, string(b))
}

func TestSessionPolicyReadWrite(t *testing.T) {
	b, err := catalog.SessionPolicy([]string{"s3://bkt/wh/t/"}, catalog.AccessReadWrite)
	require.NoError(t, err)
	var doc struct {
		Statement []struct {
			Effect   string
			Action   []string
			Resource []string
		}
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Len(t, doc.Statement, 2)
	w := doc.Statement[0]
	require.Equal(t, "Allow", w.Effect)
	require.ElementsMatch(t, []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}, w.Action)
	require.Equal(t, []string{"arn:aws:s3:::bkt/wh/t/*"}, w.Resource)
	for _, st := range doc.Statement {
		for _, r := range st.Resource {
			require.NotContains(t, r, "*/", "no wildcard above the table")
			require.NotEqual(t, "arn:aws:s3:::bkt/*", r)
		}
	}
}

func TestSessionPolicyRefusesNonTableLocations(t *testing.T) {
	// A location holding an IAM wildcard or variable, or a URI query or
	// fragment, would widen the policy to other tables (a trial's "t?",
	// "*" and "${aws:username}").
	for _, loc := range []string{"s3://bkt", "s3://bkt/", "file:///tmp/x", "gs://b/x",
		"s3://bkt/wh/ns/t?", "s3://bkt/wh/ns/*", "s3://bkt/wh/ns/%2A", "s3://bkt/wh/ns/${aws:username}", "s3://bkt/wh/ns/t#x"} {
		_, err := catalog.SessionPolicy([]string{loc}, catalog.AccessRead)
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, loc)
	}
}

func TestVendStaticCredentialsOnlyWhenConfigured(t *testing.T) {
	ctx := context.Background()
	props := map[string]string{catalog.PropS3Endpoint: "http://127.0.0.1:9", catalog.PropS3Region: "eu-west-1",
		catalog.PropS3AccessKeyID: "AKIASTATIC", catalog.PropS3SecretAccessKey: "static-secret"}
	wh, err := catalog.NewWarehouse("w", "s3://bkt/wh", props)
	require.NoError(t, err)
	require.False(t, wh.CanVend())
	creds, err := wh.VendCredentials(ctx, []string{"s3://bkt/wh/t"}, catalog.AccessRead)
	require.NoError(t, err)
	require.Nil(t, creds, "static keys are not vended without vend-static-credentials")
	require.Equal(t, map[string]string{"s3.endpoint": "http://127.0.0.1:9", "s3.region": "eu-west-1", "client.region": "eu-west-1",
		"s3.path-style-access": "true", "s3.force-virtual-addressing": "false"}, wh.ClientConfig())

	props[catalog.PropVendStaticCredentials] = "true"
	wh, err = catalog.NewWarehouse("w", "s3://bkt/wh", props)
	require.NoError(t, err)
	creds, err = wh.VendCredentials(ctx, []string{"s3://bkt/wh/t"}, catalog.AccessRead)
	require.NoError(t, err)
	require.Len(t, creds, 1)
	require.Equal(t, "s3://bkt/wh/t", creds[0].Prefix)
	require.Equal(t, "static-secret", creds[0].Config["s3.secret-access-key"])
	// A location holding a space: a prefix for each spelling of its
	// files (TestSessionPolicyCoversEncodedSpelling).
	creds, err = wh.VendCredentials(ctx, []string{"s3://bkt/wh/my dir/t"}, catalog.AccessRead)
	require.NoError(t, err)
	require.Len(t, creds, 2)
	require.Equal(t, "s3://bkt/wh/my dir/t", creds[0].Prefix)
	require.Equal(t, "s3://bkt/wh/my%20dir/t", creds[1].Prefix)

	_, err = wh.VendCredentials(ctx, []string{"s3://bkt/other/t"}, catalog.AccessRead)
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
}

func TestWarehouseS3PropertiesValidated(t *testing.T) {
	for _, props := range []map[string]string{
		{catalog.PropS3PathStyleAccess: "yes"},
		{catalog.PropS3AccessKeyID: "AKIA"},
		{catalog.PropVendStaticCredentials: "true"},
		{catalog.PropCredentialsDurationSeconds: "60"},
	} {
		_, err := catalog.NewWarehouse("w", "s3://bkt/wh", props)
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, props)
	}
	wh, err := catalog.NewWarehouse("w", "s3://bkt/wh", map[string]string{catalog.PropS3AccessKeyID: "AKIA", catalog.PropS3SecretAccessKey: "sekrit"})
	require.NoError(t, err)
	require.NotContains(t, wh.String(), "sekrit")
}

// A table's credentials cover every directory its files lie in (its
// location, write.data.path, a location it moved away from): a trial's
// table with write.data.path could not read its own data files. The
// policy stays within STS's 2,048 characters: past it the trailing
// (oldest) directories are left out, never the current ones.
func TestSessionPolicyCoversEveryDirectory(t *testing.T) {
	b, err := catalog.SessionPolicy([]string{"s3://bkt/wh/ns/t", "s3://bkt/wh/ns/t-data"}, catalog.AccessReadWrite)
	require.NoError(t, err)
	var doc struct {
		Statement []struct {
			Sid       string
			Resource  []string
			Condition map[string]map[string][]string
		}
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Len(t, doc.Statement, 2)
	require.Equal(t, []string{"arn:aws:s3:::bkt/wh/ns/t/*", "arn:aws:s3:::bkt/wh/ns/t-data/*"}, doc.Statement[0].Resource)
	require.Equal(t, []string{"arn:aws:s3:::bkt"}, doc.Statement[1].Resource)
	require.Equal(t, []string{"wh/ns/t/*", "wh/ns/t-data/*"}, doc.Statement[1].Condition["StringLike"]["s3:prefix"])
	_, err = catalog.SessionPolicy(nil, catalog.AccessRead)
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)

	// 61-character directories: 10 fit; 40 do not, and the policy keeps
	// the first ones.
	dir := func(i int) string { return fmt.Sprintf("s3://analytics-lake-bucket/warehouse/sales/orders-%012d", i) }
	var many []string
	for i := range 40 {
		many = append(many, dir(i))
	}
	b, err = catalog.SessionPolicy(many[:10], catalog.AccessReadWrite)
	require.NoError(t, err)
	require.LessOrEqual(t, len(b), catalog.MaxSessionPolicyBytes)
	require.Contains(t, string(b), strings.TrimPrefix(dir(9), "s3://"))
	b, err = catalog.SessionPolicy(many, catalog.AccessReadWrite)
	require.NoError(t, err)
	require.LessOrEqual(t, len(b), catalog.MaxSessionPolicyBytes)
	require.Contains(t, string(b), strings.TrimPrefix(dir(0), "s3://"), "the current location is kept")
	require.NotContains(t, string(b), strings.TrimPrefix(dir(39), "s3://"))
}

// Regression: the credentials of a table whose location holds a space
// did not reach the files iceberg-go writes for it, whose keys are
// percent-encoded (wh/my%20dir/t/metadata/...: its location provider
// encodes the path and its S3 FileIO keeps the key as is), only those
// written with the raw key (Java, pyiceberg). The policy names both
// spellings.
func TestSessionPolicyCoversEncodedSpelling(t *testing.T) {
	b, err := catalog.SessionPolicy([]string{"s3://bkt/wh/my dir/t"}, catalog.AccessRead)
	require.NoError(t, err)
	require.JSONEq(t, `{"Version":"2012-10-17","Statement":[
	 {"Sid":"TableObjects","Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::bkt/wh/my dir/t/*","arn:aws:s3:::bkt/wh/my%20dir/t/*"]},
	 {"Sid":"ListTablePrefix","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::bkt"],
	  "Condition":{"StringLike":{"s3:prefix":["wh/my dir/t/*","wh/my%20dir/t/*"]}}}]}`, string(b))
}
