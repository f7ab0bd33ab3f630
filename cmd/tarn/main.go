// Command tarn is the Tarn server: an Apache Iceberg REST Catalog (and,
// as it grows, a Kafka topic materializer) in one binary.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version or VCS revision from the build info is used.
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return "dev"
}

func main() {
	_, stopPprof := startPprof(os.Getenv(pprofListenEnv))
	err := newRootCmd().Execute()
	stopPprof()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tarn:", err)
		os.Exit(1)
	}
}

// newRootCmd is the command tree of the binary (docs/configuration.md
// lists every flag of it).
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "tarn",
		Short:         "Tarn: an Apache Iceberg REST catalog server",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCmd(), newDemoCmd(), newTopicsCmd(), newProduceCmd(), newPrincipalsCmd(), newRolesCmd(), newGrantsCmd(), newMaintenanceCmd(), newFormatsCmd(), newPublishCmd(), newMigrateCmd(), newVersionCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "tarn", buildVersion())
		},
	}
}
