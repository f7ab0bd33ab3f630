// A real OpenID provider for Tarn's tests: panva's oidc-provider (npm),
// configured for the client_credentials grant with JWT access tokens.
// Run through scripts/oidc-provider.sh, which installs it under
// $HOME/.cache/tarn/oidc-provider.
//
// Env: OIDC_PORT (required), OIDC_CLIENT_ID, OIDC_CLIENT_SECRET,
// OIDC_AUDIENCE (aud of the access tokens, default tarn),
// OIDC_GROUPS (comma-separated, put in the tokens' "groups" claim).
import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const groups = (process.env.OIDC_GROUPS || '').split(',').filter(Boolean);
const audience = process.env.OIDC_AUDIENCE || 'tarn';

const provider = new Provider(issuer, {
  clients: [{
    client_id: process.env.OIDC_CLIENT_ID || 'tarn-client',
    client_secret: process.env.OIDC_CLIENT_SECRET || 'tarn-client-secret',
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  features: {
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => 'urn:tarn:catalog',
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({ scope: 'catalog', audience, accessTokenFormat: 'jwt', accessTokenTTL: 3600, jwt: { sign: { alg: 'RS256' } } }),
    },
  },
  extraTokenClaims: () => (groups.length ? { groups } : undefined),
});
provider.listen(port, '127.0.0.1', () => console.log(`oidc-provider listening on ${issuer}`));
