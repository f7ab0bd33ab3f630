package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tarnhq/tarn/auth"
	"github.com/tarnhq/tarn/server"
)

// clientAuth is how the CLI's management clients (tarn topics,
// principals, roles, grants) authenticate to a server in oauth2 mode:
// --credential id:secret (TARN_CREDENTIAL; a token is fetched from
// /oauth/tokens once per run) or --token (TARN_TOKEN); --ca-cert
// (TARN_CA_CERT) trusts a private CA for https servers.
type clientAuth struct {
	credential string
	token      string
	caCert     string

	once     sync.Once
	err      error
	fresh    string
	resolved bool // resolve ran (flags registered); else apply reads the env
}

func (a *clientAuth) register(pf *pflag.FlagSet) {
	pf.StringVar(&a.credential, "credential", "", "id:secret to fetch a token with (env TARN_CREDENTIAL)")
	pf.StringVar(&a.token, "token", "", "bearer token (env TARN_TOKEN)")
	pf.StringVar(&a.caCert, "ca-cert", "", "PEM CA certificate to trust for an https --server (env TARN_CA_CERT)")
}

// resolve fills unset flags from the environment and returns the HTTP
// client to use.
func (a *clientAuth) resolve(fs *pflag.FlagSet) (*http.Client, error) {
	for name, p := range map[string]*string{"credential": &a.credential, "token": &a.token, "ca-cert": &a.caCert} {
		if !fs.Changed(name) {
			if v, ok := os.LookupEnv(envName(name)); ok && v != "" {
				*p = v
			}
		}
	}
	a.resolved = true
	hc := &http.Client{Timeout: clientTimeout}
	if a.caCert != "" {
		tr, err := caTransport(a.caCert)
		if err != nil {
			return nil, err
		}
		hc.Transport = tr
	}
	return hc, nil
}

// caTransport trusts the PEM CA certificate in path.
func caTransport(path string) (*http.Transport, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ca-cert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca-cert %s: no certificate", path)
	}
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}, nil
}

// apply sets the Authorization header of req, fetching a token first
// when only a credential is given. Nothing when neither is set (a
// server in --auth none mode).
func (a *clientAuth) apply(ctx context.Context, hc *http.Client, server string, req *http.Request) error {
	if !a.resolved { // a client that registered no auth flags (tarn maintenance): the env only
		a.resolved = true
		a.credential, a.token = os.Getenv(envName("credential")), os.Getenv(envName("token"))
		if ca := os.Getenv(envName("ca-cert")); ca != "" && hc.Transport == nil {
			tr, err := caTransport(ca)
			if err != nil {
				return err
			}
			hc.Transport = tr
		}
	}
	tok := a.token
	if tok == "" && a.credential != "" {
		a.once.Do(func() { a.fresh, a.err = fetchToken(ctx, hc, server, a.credential) })
		if a.err != nil {
			return a.err
		}
		tok = a.fresh
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return nil
}

// fetchToken runs the client_credentials grant against server.
func fetchToken(ctx context.Context, hc *http.Client, server, credential string) (string, error) {
	id, secret, ok := strings.Cut(credential, ":")
	if !ok {
		return "", fmt.Errorf("--credential must be id:secret")
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, server+"/oauth/tokens", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rsp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("tarn server at %s: %w", server, err)
	}
	defer rsp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(rsp.Body, 1<<20))
	if rsp.StatusCode != http.StatusOK {
		var oe auth.OAuthError
		if json.Unmarshal(b, &oe) == nil && oe.Code != "" {
			return "", fmt.Errorf("token: %s: %s", oe.Code, oe.Description)
		}
		if text := strings.TrimSpace(string(b)); text != "" && len(text) < 200 {
			// e.g. Go's "Client sent an HTTP request to an HTTPS server."
			return "", fmt.Errorf("token: HTTP %d from %s: %s", rsp.StatusCode, server, text)
		}
		return "", fmt.Errorf("token: HTTP %d from %s", rsp.StatusCode, server)
	}
	var tr auth.TokenResponse
	if err := json.Unmarshal(b, &tr); err != nil || tr.AccessToken == "" {
		return "", fmt.Errorf("token: unexpected response")
	}
	return tr.AccessToken, nil
}

// newAccessClient is the management client of principals, roles and
// grants (the same client as tarn topics).
func newAccessCmd(use, short, long string, sub func(c *topicsClient) []*cobra.Command) *cobra.Command {
	c := &topicsClient{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long + "\n\nTalks to the management API at --server (default " + defaultServer + ", or TARN_SERVER)\nas a principal with manage on the catalog (--credential or --token).",
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return c.setup(cmd)
		},
	}
	c.registerFlags(cmd.PersistentFlags())
	cmd.AddCommand(sub(c)...)
	return cmd
}

func newPrincipalsCmd() *cobra.Command {
	return newAccessCmd("principals", "Create, list, delete principals; rotate secrets; assign roles",
		"Principals are the clients of Tarn in --auth oauth2 mode: a local principal\nhas an id and a secret (credential=id:secret); an external one names the\nprincipal claim of an --oidc-issuer's tokens and holds roles for it.",
		func(c *topicsClient) []*cobra.Command {
			var external bool
			create := &cobra.Command{Use: "create ID", Short: "Create a principal and print its secret (shown once)", Args: cobra.ExactArgs(1),
				RunE: func(cmd *cobra.Command, args []string) error {
					var p server.PrincipalResponse
					if err := c.call(cmd.Context(), http.MethodPost, "/management/v1/principals", server.CreatePrincipalRequest{ID: args[0], External: external}, &p); err != nil {
						return err
					}
					return c.printSecret(cmd.OutOrStdout(), p)
				}}
			create.Flags().BoolVar(&external, "external", false, "a principal of an external OIDC issuer (no secret)")
			list := &cobra.Command{Use: "list", Short: "List principals", Args: cobra.NoArgs,
				RunE: func(cmd *cobra.Command, _ []string) error {
					var out server.ListPrincipalsResponse
					if err := c.call(cmd.Context(), http.MethodGet, "/management/v1/principals", nil, &out); err != nil {
						return err
					}
					if c.output == "json" {
						return writeJSON(cmd.OutOrStdout(), out)
					}
					tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tKIND\tROLES")
					for _, p := range out.Principals {
						kind := "local"
						if p.Root {
							kind = "root"
						} else if p.External {
							kind = "external"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\n", p.ID, kind, strings.Join(p.Roles, ","))
					}
					return tw.Flush()
				}}
			del := &cobra.Command{Use: "delete ID", Short: "Delete a principal (its tokens stop working)", Args: cobra.ExactArgs(1),
				RunE: func(cmd *cobra.Command, args []string) error {
					return c.call(cmd.Context(), http.MethodDelete, "/management/v1/principals/"+url.PathEscape(args[0]), nil, nil)
				}}
			rotate := &cobra.Command{Use: "rotate-secret ID", Short: "Replace a principal's secret and print the new one", Args: cobra.ExactArgs(1),
				RunE: func(cmd *cobra.Command, args []string) error {
					var p server.PrincipalResponse
					if err := c.call(cmd.Context(), http.MethodPost, "/management/v1/principals/"+url.PathEscape(args[0])+"/rotate-secret", nil, &p); err != nil {
						return err
					}
					return c.printSecret(cmd.OutOrStdout(), p)
				}}
			role := func(use, method, short string) *cobra.Command {
				return &cobra.Command{Use: use + " ID ROLE", Short: short, Args: cobra.ExactArgs(2),
					RunE: func(cmd *cobra.Command, args []string) error {
						return c.call(cmd.Context(), method, "/management/v1/principals/"+url.PathEscape(args[0])+"/roles/"+url.PathEscape(args[1]), nil, nil)
					}}
			}
			return []*cobra.Command{create, list, del, rotate,
				role("assign", http.MethodPut, "Give a principal a role"), role("unassign", http.MethodDelete, "Take a role from a principal")}
		})
}

func (c *topicsClient) printSecret(w io.Writer, p server.PrincipalResponse) error {
	if c.output == "json" {
		return writeJSON(w, p)
	}
	if p.Secret == "" {
		_, err := fmt.Fprintf(w, "principal %s (external: no secret)\n", p.ID)
		return err
	}
	_, err := fmt.Fprintf(w, "principal %s\ncredential (shown once): %s:%s\n", p.ID, p.ID, p.Secret)
	return err
}

func newRolesCmd() *cobra.Command {
	return newAccessCmd("roles", "Create, list and delete roles",
		"Roles hold grants; principals hold roles.",
		func(c *topicsClient) []*cobra.Command {
			create := &cobra.Command{Use: "create NAME", Short: "Create a role", Args: cobra.ExactArgs(1),
				RunE: func(cmd *cobra.Command, args []string) error {
					return c.call(cmd.Context(), http.MethodPost, "/management/v1/roles", server.CreateRoleRequest{Name: args[0]}, nil)
				}}
			list := &cobra.Command{Use: "list", Short: "List roles", Args: cobra.NoArgs,
				RunE: func(cmd *cobra.Command, _ []string) error {
					var out server.ListRolesResponse
					if err := c.call(cmd.Context(), http.MethodGet, "/management/v1/roles", nil, &out); err != nil {
						return err
					}
					if c.output == "json" {
						return writeJSON(cmd.OutOrStdout(), out)
					}
					for _, r := range out.Roles {
						fmt.Fprintln(cmd.OutOrStdout(), r.Name)
					}
					return nil
				}}
			del := &cobra.Command{Use: "delete NAME", Short: "Delete a role, its grants and its assignments", Args: cobra.ExactArgs(1),
				RunE: func(cmd *cobra.Command, args []string) error {
					return c.call(cmd.Context(), http.MethodDelete, "/management/v1/roles/"+url.PathEscape(args[0]), nil, nil)
				}}
			return []*cobra.Command{create, list, del}
		})
}

func newGrantsCmd() *cobra.Command {
	return newAccessCmd("grants", "Grant, revoke and list privileges of roles",
		"A grant is a privilege (read, write, create, drop, manage) on a securable:\ncatalog, namespace:NS, table:NS.NAME or view:NS.NAME (levels joined by dots;\nwhen a level or the name holds a dot, namespace:[\"sales.eu\"] or\ntable:{\"namespace\":[\"sales.eu\"],\"name\":\"orders\"}).\nA grant on a namespace covers everything beneath it; manage implies every\nprivilege and write implies read.",
		func(c *topicsClient) []*cobra.Command {
			grant := func(args []string) (auth.Grant, error) {
				p, err := auth.ParsePrivilege(args[1])
				if err != nil {
					return auth.Grant{}, err
				}
				on, err := auth.ParseSecurable(args[2])
				if err != nil {
					return auth.Grant{}, err
				}
				return auth.Grant{Role: args[0], Privilege: p, On: on}, nil
			}
			add := &cobra.Command{Use: "add ROLE PRIVILEGE SECURABLE", Short: "Grant a privilege to a role", Args: cobra.ExactArgs(3),
				Example: "  tarn grants add analysts read namespace:sales\n  tarn grants add etl write table:sales.orders\n  tarn grants add etl write 'table:{\"namespace\":[\"sales.eu\"],\"name\":\"orders\"}'\n  tarn grants add admins manage catalog",
				RunE: func(cmd *cobra.Command, args []string) error {
					g, err := grant(args)
					if err != nil {
						return err
					}
					return c.call(cmd.Context(), http.MethodPost, "/management/v1/grants", g, nil)
				}}
			revoke := &cobra.Command{Use: "revoke ROLE PRIVILEGE SECURABLE", Short: "Revoke a grant", Args: cobra.ExactArgs(3),
				RunE: func(cmd *cobra.Command, args []string) error {
					g, err := grant(args)
					if err != nil {
						return err
					}
					return c.call(cmd.Context(), http.MethodPost, "/management/v1/grants/revoke", g, nil)
				}}
			var role string
			list := &cobra.Command{Use: "list", Short: "List grants", Args: cobra.NoArgs,
				RunE: func(cmd *cobra.Command, _ []string) error {
					var out server.ListGrantsResponse
					path := "/management/v1/grants"
					if role != "" {
						path += "?role=" + url.QueryEscape(role)
					}
					if err := c.call(cmd.Context(), http.MethodGet, path, nil, &out); err != nil {
						return err
					}
					if c.output == "json" {
						return writeJSON(cmd.OutOrStdout(), out)
					}
					tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ROLE\tPRIVILEGE\tON")
					for _, g := range out.Grants {
						fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Role, g.Privilege, g.On)
					}
					return tw.Flush()
				}}
			list.Flags().StringVar(&role, "role", "", "only this role's grants")
			return []*cobra.Command{add, revoke, list}
		})
}

// registerFlags registers --server, --output and the auth flags of a
// management client (tarn topics, maintenance, principals, roles, grants).
func (c *topicsClient) registerFlags(pf *pflag.FlagSet) {
	pf.StringVar(&c.server, "server", defaultServer, "Tarn server URL (env TARN_SERVER)")
	pf.StringVarP(&c.output, "output", "o", "table", "output format: table or json")
	c.auth.register(pf)
}

// setup resolves --server and the auth flags from the environment and
// checks --output.
func (c *topicsClient) setup(cmd *cobra.Command) error {
	if !cmd.Flags().Changed("server") {
		if v, ok := os.LookupEnv(envName("server")); ok && v != "" {
			c.server = v
		}
	}
	c.server = strings.TrimSuffix(c.server, "/")
	hc, err := c.auth.resolve(cmd.Flags())
	if err != nil {
		return err
	}
	c.hc = hc
	if c.output != "table" && c.output != "json" {
		return fmt.Errorf("--output must be table or json, got %q", c.output)
	}
	return nil
}
