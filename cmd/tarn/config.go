package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// envPrefix prefixes the environment form of every flag: --data-dir is
// TARN_DATA_DIR.
const envPrefix = "TARN_"

// envName is the environment variable of a flag.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyConfig fills flags the command line did not set, first from the
// YAML file named by --config (keys are flag names), then from TARN_*
// environment variables, so the precedence is flags > TARN_* > YAML >
// defaults. An unknown YAML key is an error, so typos do not pass silently.
// This is the only way a file configures Tarn: the packages' Config
// structs carry no yaml tags; the commands fill them from their flags.
func applyConfig(fs *pflag.FlagSet) error {
	cli := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { cli[f.Name] = true })

	path := fs.Lookup("config").Value.String()
	if v, ok := os.LookupEnv(envName("config")); ok && !cli["config"] {
		path = v
	}
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read config: %w", err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("parse config %s: %w", path, err)
		}
		for k, v := range doc {
			f := fs.Lookup(k)
			if f == nil && k != "config" {
				// FileIO property names (s3.endpoint) name the --s3-endpoint flag.
				f = fs.Lookup(strings.ReplaceAll(k, ".", "-"))
			}
			if f == nil || k == "config" {
				return fmt.Errorf("config %s: unknown key %q", path, k)
			}
			if cli[k] {
				continue
			}
			val := fmt.Sprint(v)
			switch v.(type) {
			case []any, map[string]any: // a structured value (warehouses) is passed on as JSON
				b, err := json.Marshal(v)
				if err != nil {
					return fmt.Errorf("config %s: %s: %w", path, k, err)
				}
				val = string(b)
			}
			if err := f.Value.Set(val); err != nil {
				return fmt.Errorf("config %s: %s: %w", path, k, err)
			}
		}
	}
	return applyEnv(fs, func(string) bool { return true })
}

// applyEnv fills the flags named by which that the command line did not
// set from their TARN_* environment variables.
func applyEnv(fs *pflag.FlagSet, which func(name string) bool) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if !which(f.Name) || fs.Changed(f.Name) || err != nil {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if serr := f.Value.Set(v); serr != nil {
				err = fmt.Errorf("%s: %w", envName(f.Name), serr)
			}
		}
	})
	return err
}
