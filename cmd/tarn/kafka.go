package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/pkg/sr"
)

// SASL mechanisms --kafka-sasl-mechanism accepts.
const (
	saslPlain       = "PLAIN"
	saslScramSHA256 = "SCRAM-SHA-256"
	saslScramSHA512 = "SCRAM-SHA-512"
)

// secret is a flag value that never prints: help, logs and errors show
// "********" (or nothing when unset).
type secret string

func (s *secret) String() string {
	if *s == "" {
		return ""
	}
	return "********"
}
func (s *secret) Set(v string) error { *s = secret(v); return nil }
func (s *secret) Type() string       { return "string" }

// kafkaConfig is how `tarn serve` reaches Kafka and the schema registry.
// Empty brokers: ingest is off and serve is a catalog only.
type kafkaConfig struct {
	brokers               string
	saslMechanism         string
	saslUsername          string
	saslPassword          secret
	tls                   bool
	tlsCAFile             string
	tlsCertFile           string
	tlsKeyFile            string
	tlsInsecureSkipVerify bool
	registryURL           string
	registryUsername      string
	registryPassword      secret
}

// register registers the flags of tarn serve.
func (k *kafkaConfig) register(f *pflag.FlagSet) {
	k.registerBrokers(f, "Kafka seed brokers, host:port, comma-separated (empty: no ingest, catalog only)")
	k.registerRegistry(f, "Confluent-compatible schema registry URL(s), comma-separated (empty: only json and raw topics)")
}

// registerBrokers registers the --kafka-* flags; brokersUsage is the
// help of --kafka-brokers, which says what an empty list means.
func (k *kafkaConfig) registerBrokers(f *pflag.FlagSet, brokersUsage string) {
	f.StringVar(&k.brokers, "kafka-brokers", "", brokersUsage)
	f.StringVar(&k.saslMechanism, "kafka-sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (empty: no SASL)")
	f.StringVar(&k.saslUsername, "kafka-sasl-username", "", "SASL username")
	f.Var(&k.saslPassword, "kafka-sasl-password", "SASL password")
	f.BoolVar(&k.tls, "kafka-tls", false, "connect to the brokers with TLS (implied by the other --kafka-tls-* flags)")
	f.StringVar(&k.tlsCAFile, "kafka-tls-ca-file", "", "PEM file of the CA certificates that sign the brokers' (default: the system's)")
	f.StringVar(&k.tlsCertFile, "kafka-tls-cert-file", "", "PEM client certificate for mutual TLS (with --kafka-tls-key-file)")
	f.StringVar(&k.tlsKeyFile, "kafka-tls-key-file", "", "PEM client key for mutual TLS")
	f.BoolVar(&k.tlsInsecureSkipVerify, "kafka-tls-insecure-skip-verify", false, "do not verify the brokers' certificates (testing only)")
}

// registerRegistry registers the --schema-registry-* flags; urlUsage is
// the help of --schema-registry-url.
func (k *kafkaConfig) registerRegistry(f *pflag.FlagSet, urlUsage string) {
	f.StringVar(&k.registryURL, "schema-registry-url", "", urlUsage)
	f.StringVar(&k.registryUsername, "schema-registry-username", "", "schema registry basic-auth username")
	f.Var(&k.registryPassword, "schema-registry-password", "schema registry basic-auth password")
}

// isKafkaFlag reports whether a flag is one of kafkaConfig's, which
// every command that reaches Kafka reads from TARN_* as well.
func isKafkaFlag(name string) bool {
	return strings.HasPrefix(name, "kafka-") || strings.HasPrefix(name, "schema-registry-")
}

// client returns a franz-go client of the brokers with the SASL and TLS
// options and extra. Errors: no --kafka-brokers, bad settings.
func (k kafkaConfig) client(extra ...kgo.Opt) (*kgo.Client, error) {
	if err := k.validate(); err != nil {
		return nil, err
	}
	if len(k.brokerList()) == 0 {
		return nil, fmt.Errorf("--kafka-brokers (or TARN_KAFKA_BROKERS) is required")
	}
	opts, err := k.opts()
	if err != nil {
		return nil, err
	}
	opts = append(append([]kgo.Opt{kgo.SeedBrokers(k.brokerList()...)}, opts...), extra...)
	return kgo.NewClient(opts...)
}

// brokerList splits --kafka-brokers.
func (k kafkaConfig) brokerList() []string {
	var out []string
	for _, b := range strings.Split(k.brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

func (k kafkaConfig) tlsOn() bool {
	return k.tls || k.tlsCAFile != "" || k.tlsCertFile != "" || k.tlsKeyFile != "" || k.tlsInsecureSkipVerify
}

// validate refuses settings that cannot work, naming the flag.
func (k kafkaConfig) validate() error {
	switch strings.ToUpper(k.saslMechanism) {
	case "":
		if k.saslUsername != "" || k.saslPassword != "" {
			return fmt.Errorf("--kafka-sasl-username and --kafka-sasl-password need --kafka-sasl-mechanism")
		}
	case saslPlain, saslScramSHA256, saslScramSHA512:
		if k.saslUsername == "" {
			return fmt.Errorf("--kafka-sasl-mechanism %s needs --kafka-sasl-username", k.saslMechanism)
		}
	default:
		return fmt.Errorf("--kafka-sasl-mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got %q", k.saslMechanism)
	}
	if (k.tlsCertFile == "") != (k.tlsKeyFile == "") {
		return fmt.Errorf("--kafka-tls-cert-file and --kafka-tls-key-file go together")
	}
	if (k.registryUsername == "") != (k.registryPassword == "") {
		return fmt.Errorf("--schema-registry-username and --schema-registry-password go together")
	}
	if len(k.brokerList()) == 0 && (k.saslMechanism != "" || k.tlsOn() || k.registryURL != "") {
		return fmt.Errorf("Kafka and registry options need --kafka-brokers")
	}
	return nil
}

// opts are the kgo options for SASL and TLS (the seed brokers are passed
// separately).
func (k kafkaConfig) opts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if m := k.mechanism(); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	if k.tlsOn() {
		tc, err := k.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	return opts, nil
}

func (k kafkaConfig) mechanism() sasl.Mechanism {
	user, pass := k.saslUsername, string(k.saslPassword)
	switch strings.ToUpper(k.saslMechanism) {
	case saslPlain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism()
	case saslScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case saslScramSHA512:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	}
	return nil
}

func (k kafkaConfig) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: k.tlsInsecureSkipVerify} //nolint:gosec // opt-in for tests
	if k.tlsCAFile != "" {
		pem, err := os.ReadFile(k.tlsCAFile)
		if err != nil {
			return nil, fmt.Errorf("--kafka-tls-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--kafka-tls-ca-file %s: no PEM certificates", k.tlsCAFile)
		}
		tc.RootCAs = pool
	}
	if k.tlsCertFile != "" {
		cert, err := tls.LoadX509KeyPair(k.tlsCertFile, k.tlsKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--kafka-tls-cert-file/--kafka-tls-key-file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// registry returns the schema registry client with extra options, nil
// without a URL. An https registry is verified with the Kafka CA file too
// when one is given.
func (k kafkaConfig) registry(extra ...sr.ClientOpt) (*sr.Client, error) {
	if k.registryURL == "" {
		return nil, nil
	}
	var urls []string
	for _, u := range strings.Split(k.registryURL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	opts := []sr.ClientOpt{sr.URLs(urls...), sr.UserAgent("tarn")}
	if k.registryUsername != "" {
		opts = append(opts, sr.BasicAuth(k.registryUsername, string(k.registryPassword)))
	}
	if k.tlsCAFile != "" || k.tlsInsecureSkipVerify {
		tc, err := k.tlsConfig()
		if err != nil {
			return nil, err
		}
		tc.Certificates = nil
		opts = append(opts, sr.DialTLSConfig(tc))
	}
	cl, err := sr.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("--schema-registry-url: %w", err)
	}
	return cl, nil
}
