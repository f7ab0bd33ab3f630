package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaSASLOptions: the options built from the SASL flags authenticate
// against a kfake cluster for each mechanism, and a wrong password fails.
func TestKafkaSASLOptions(t *testing.T) {
	for _, mech := range []string{saslPlain, saslScramSHA256, saslScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser(mech, "tarn", "s3cret"))
			require.NoError(t, err)
			defer kc.Close()
			ping := func(pass string) error {
				k := kafkaConfig{brokers: kc.ListenAddrs()[0], saslMechanism: mech, saslUsername: "tarn", saslPassword: secret(pass)}
				require.NoError(t, k.validate())
				opts, err := k.opts()
				require.NoError(t, err)
				cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(k.brokerList()...)}, opts...)...)
				require.NoError(t, err)
				defer cl.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				return cl.Ping(ctx)
			}
			assert.NoError(t, ping("s3cret"))
			assert.Error(t, ping("wrong"))
		})
	}
}

// TestSecretNeverPrints: a secret flag value prints as stars.
func TestSecretNeverPrints(t *testing.T) {
	s := secret("hunter2")
	assert.Equal(t, "********", s.String())
	var empty secret
	assert.Empty(t, empty.String())
}
