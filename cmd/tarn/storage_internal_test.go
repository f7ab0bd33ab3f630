package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/storage"
)

// An unknown key in a `warehouses` entry (JSON flag or YAML, which reaches
// Set as JSON) is a startup error naming the key, never its value; the
// flag spelling sts-endpoint is accepted as sts.endpoint.
func TestWarehouseListUnknownKey(t *testing.T) {
	var w warehouseList
	err := w.Set(`[{"name":"analytics","location":"s3://b/w","s3.endpiont":"http://x","s3.secret-access-key":"hush-hush"}]`)
	require.Error(t, err)
	require.Contains(t, err.Error(), `unknown key "s3.endpiont"`)
	require.Contains(t, err.Error(), "warehouse 0")
	require.NotContains(t, err.Error(), "hush-hush")
	require.NotContains(t, err.Error(), "http://x")

	for _, k := range []string{"sts_endpoint", "region", "s3.proxy-uri", "bucket", "client.region"} {
		require.ErrorContains(t, w.Set(`[{"name":"a","location":"s3://b/w","`+k+`":"v"}]`), `unknown key "`+k+`"`, k)
	}
	require.ErrorContains(t, w.Set(`[{"name":"a","location":"s3://b/w","sts-endpoint":"http://s","sts.endpoint":"http://t"}]`), "sts.endpoint is given twice")
	// A key given twice in the JSON itself, or data after the list, is
	// refused too (strictjson), naming the key, never its value.
	err = w.Set(`[{"name":"a","location":"s3://b/w","s3.secret-access-key":"one","s3.secret-access-key":"hush-hush"}]`)
	require.ErrorContains(t, err, `duplicate object member name "s3.secret-access-key"`)
	require.NotContains(t, err.Error(), "hush-hush")
	require.ErrorContains(t, w.Set(`[{"name":"a","location":"s3://b/w"}]]`), "data after the JSON value")

	require.NoError(t, w.Set(`[{"name":"a","location":"s3://b/w","sts-endpoint":"http://sts:4566","s3.region":"eu-west-1","sts-enabled":true,"credentials-duration-seconds":900,"s3.request-timeout":"5s"}]`))
	require.Len(t, w.entries, 1)
	require.Equal(t, map[string]string{storage.PropSTSEndpoint: "http://sts:4566", storage.PropS3Region: "eu-west-1",
		storage.PropSTSEnabled: "true", storage.PropCredentialsDurationSeconds: "900", storage.PropS3RequestTimeout: "5s"}, w.entries[0].props)
}
