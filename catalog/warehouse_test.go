package catalog_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/spec"
	"github.com/tarnhq/tarn/storage"
)

// The catalog.Warehouse API over package storage's S3: a warehouse's S3
// properties validated, what it vends and signs for only inside it.

// signingWarehouse is an S3 warehouse with static keys that sign (the
// signing itself is tested in package storage).
func signingWarehouse(t *testing.T) *catalog.Warehouse {
	t.Helper()
	wh, err := catalog.NewWarehouse("w", "s3://bkt/wh", map[string]string{
		storage.PropS3Endpoint: "http://127.0.0.1:9000", storage.PropS3Region: "us-east-1",
		storage.PropS3AccessKeyID: "AKIASIGNER", storage.PropS3SecretAccessKey: "signer-secret"})
	require.NoError(t, err)
	return wh
}

func TestVendStaticCredentialsOnlyWhenConfigured(t *testing.T) {
	ctx := context.Background()
	props := map[string]string{storage.PropS3Endpoint: "http://127.0.0.1:9", storage.PropS3Region: "eu-west-1",
		storage.PropS3AccessKeyID: "AKIASTATIC", storage.PropS3SecretAccessKey: "static-secret"}
	wh, err := catalog.NewWarehouse("w", "s3://bkt/wh", props)
	require.NoError(t, err)
	require.False(t, wh.CanVend())
	creds, err := wh.VendCredentials(ctx, []string{"s3://bkt/wh/t"}, storage.AccessRead)
	require.NoError(t, err)
	require.Nil(t, creds, "static keys are not vended without vend-static-credentials")
	require.Equal(t, map[string]string{"s3.endpoint": "http://127.0.0.1:9", "s3.region": "eu-west-1", "client.region": "eu-west-1",
		"s3.path-style-access": "true", "s3.force-virtual-addressing": "false"}, wh.ClientConfig())

	props[storage.PropVendStaticCredentials] = "true"
	wh, err = catalog.NewWarehouse("w", "s3://bkt/wh", props)
	require.NoError(t, err)
	creds, err = wh.VendCredentials(ctx, []string{"s3://bkt/wh/t"}, storage.AccessRead)
	require.NoError(t, err)
	require.Len(t, creds, 1)
	require.Equal(t, "s3://bkt/wh/t", creds[0].Prefix)
	require.Equal(t, "static-secret", creds[0].Config["s3.secret-access-key"])
	// A location holding a space: a prefix for each spelling of its
	// files (TestSessionPolicyCoversEncodedSpelling).
	creds, err = wh.VendCredentials(ctx, []string{"s3://bkt/wh/my dir/t"}, storage.AccessRead)
	require.NoError(t, err)
	require.Len(t, creds, 2)
	require.Equal(t, "s3://bkt/wh/my dir/t", creds[0].Prefix)
	require.Equal(t, "s3://bkt/wh/my%20dir/t", creds[1].Prefix)

	_, err = wh.VendCredentials(ctx, []string{"s3://bkt/other/t"}, storage.AccessRead)
	require.ErrorIs(t, err, catalog.ErrInvalidArgument)
}

func TestWarehouseS3PropertiesValidated(t *testing.T) {
	for _, props := range []map[string]string{
		{storage.PropS3PathStyleAccess: "yes"},
		{storage.PropS3AccessKeyID: "AKIA"},
		{storage.PropVendStaticCredentials: "true"},
		{storage.PropCredentialsDurationSeconds: "60"},
	} {
		_, err := catalog.NewWarehouse("w", "s3://bkt/wh", props)
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, props)
	}
	wh, err := catalog.NewWarehouse("w", "s3://bkt/wh", map[string]string{storage.PropS3AccessKeyID: "AKIA", storage.PropS3SecretAccessKey: "sekrit"})
	require.NoError(t, err)
	require.NotContains(t, wh.String(), "sekrit")
}

// A table of another warehouse (signing through the wrong prefix) is not
// signed with this warehouse's keys, even in the same bucket: 400 as
// VendCredentials (loadTable with vended-credentials, /credentials).
func TestSignS3RequestOtherWarehouse(t *testing.T) {
	wh := signingWarehouse(t) // s3://bkt/wh
	for _, loc := range []string{"s3://bkt/analytics/an/events2-1", "s3://bkt/wh2/t-1", "s3://other/wh/t-1", "s3://bkt/wh/../analytics/t"} {
		_, err := wh.SignS3Request(context.Background(), []string{loc}, spec.RemoteSignRequest{
			Region: "us-east-1", Method: "GET", URI: "http://127.0.0.1:9000/" + strings.TrimPrefix(loc, "s3://") + "/data/x",
			Headers: map[string][]string{}})
		require.ErrorIs(t, err, catalog.ErrInvalidArgument, loc)
		_, verr := wh.VendCredentials(context.Background(), []string{loc}, storage.AccessRead)
		require.ErrorIs(t, verr, catalog.ErrInvalidArgument, loc)
	}
}

// TestWriteNewRefusesExistingFile: on a file:// warehouse an existing
// metadata file is refused with os.ErrExist and keeps its content (the
// S3 case is storage's TestS3LargeFileAndConditionalWrite).
func TestWriteNewRefusesExistingFile(t *testing.T) {
	ctx := context.Background()
	wh, err := catalog.NewWarehouse("w", "file://"+t.TempDir(), nil)
	require.NoError(t, err)
	loc := wh.Location + "/t/metadata/00001-x.metadata.json"
	require.NoError(t, wh.WriteNew(ctx, loc, []byte(`{"a":1}`)))
	require.ErrorIs(t, wh.WriteNew(ctx, loc, []byte(`{"a":2}`)), os.ErrExist)
	b, err := wh.Read(ctx, loc)
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(b))
}
