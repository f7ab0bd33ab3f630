package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topicsCreateCmd is `tarn topics create`: a Kafka topic through the
// brokers' admin API (franz-go's kadm), not through Tarn.
func topicsCreateCmd() *cobra.Command {
	var (
		kc         kafkaConfig
		partitions int32
		replicas   int16
		configs    []string
	)
	cmd := &cobra.Command{
		Use:   "create TOPIC",
		Short: "Create a Kafka topic (through the brokers' admin API, not through Tarn)",
		Long: `Create TOPIC on the brokers of --kafka-brokers (or TARN_KAFKA_BROKERS) with
--partitions partitions, when the brokers allow it (their ACLs and create
policy decide). Without --partitions or --replication-factor the brokers'
defaults apply (num.partitions, default.replication.factor).`,
		Example: `  tarn topics create orders --partitions 3
  tarn topics create clicks --partitions 6 --replication-factor 3 --config retention.ms=604800000`,
		Args: cobra.ExactArgs(1),
		// The management flags do not apply: the brokers are asked directly.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd.Flags(), isKafkaFlag)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			cfgs := map[string]*string{}
			for _, kv := range configs {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return fmt.Errorf("--config %q: want key=value", kv)
				}
				cfgs[k] = &v
			}
			if partitions == 0 || partitions < -1 {
				return fmt.Errorf("--partitions must be at least 1, got %d", partitions)
			}
			cl, err := kc.client()
			if err != nil {
				return err
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			res, err := adm.CreateTopic(cmd.Context(), partitions, replicas, cfgs, topic)
			if err == nil {
				err = res.Err
			}
			if errors.Is(err, kerr.TopicAlreadyExists) {
				return fmt.Errorf("topic %s already exists", topic)
			}
			if err != nil {
				if res.ErrMessage != "" {
					err = fmt.Errorf("%w: %s", err, res.ErrMessage)
				}
				return fmt.Errorf("create topic %s: %w", topic, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created topic %s: %s, replication factor %d\n", topic, counted(res.NumPartitions, "partition"), res.ReplicationFactor)
			return nil
		},
	}
	f := cmd.Flags()
	f.Int32Var(&partitions, "partitions", -1, "number of partitions (-1: the brokers' num.partitions)")
	f.Int16Var(&replicas, "replication-factor", -1, "replicas of each partition (-1: the brokers' default.replication.factor)")
	f.StringArrayVar(&configs, "config", nil, "topic configuration key=value, repeatable (retention.ms=..., cleanup.policy=...)")
	kc.registerBrokers(f, "Kafka seed brokers, host:port, comma-separated (required)")
	return cmd
}
