#!/usr/bin/env bash
# Run a real OpenID Connect provider (panva's oidc-provider 9.13.3 from npm)
# for Tarn's --oidc-issuer tests: client_credentials, RS256 JWT access
# tokens, discovery at /.well-known/openid-configuration.
#
#   OIDC_PORT=9400 OIDC_CLIENT_ID=etl OIDC_CLIENT_SECRET=s OIDC_GROUPS=analysts scripts/oidc-provider.sh
#
# Installs once into $HOME/.cache/tarn/oidc-provider (npm), then execs node
# on scripts/oidc-provider.mjs (copied there so its import resolves).
# Needs node 20.19+ and npm. `scripts/oidc-provider.sh setup` only installs
# and prints the directory.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir="${HOME:?HOME must be set}/.cache/tarn/oidc-provider"
version=9.13.3
mkdir -p "$dir"
if [[ ! -f $dir/node_modules/oidc-provider/package.json ]] ||
   ! grep -q "\"version\": \"$version\"" "$dir/node_modules/oidc-provider/package.json"; then
  [[ -f $dir/package.json ]] || echo '{"name":"tarn-oidc-provider","private":true}' >"$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --silent "oidc-provider@$version" >&2)
fi
cp "$here/oidc-provider.mjs" "$dir/server.mjs"
if [[ ${1:-} == setup ]]; then
  echo "$dir"
  exit 0
fi
exec node "$dir/server.mjs"
