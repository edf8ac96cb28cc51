// A real OpenID provider for the tests: panva/oidc-provider on 127.0.0.1, configured by a JSON
// file that tests/support/oidc_provider.py writes (it also installs the packages and starts this).
//
//   node provider.mjs CONFIG.json [PORT]     (PORT, else $OIDC_PROVIDER_PORT, else config.port)
//
// CONFIG.json:
//   issuer            "http://127.0.0.1:<port>" (default: from the port)
//   jwks_file         a private JWKS (RS256 keys with kids); the first key signs
//   default_resource  the resource indicator (an absolute URI) of a request that names none
//   audiences         {resource indicator: "aud" of its tokens}; otherwise aud is the indicator
//   access_token_ttl  seconds
//   clients           [{client_id, client_secret, scopes: [...], groups: [...]}]
//                     (client_credentials, client_secret_basic or client_secret_post)
//   public_clients    [{client_id, redirect_uris: [...], scopes: [...]}]
//                     (authorization_code with PKCE, no secret)
//   users             {account id: {groups: [...], claims: {...}}}
//
// Access tokens are JWTs (typ at+jwt) signed with the first key: iss, aud, exp, iat, jti, sub
// (the client id, or the user of an authorization code), client_id, scope, groups (of the
// client, or of the user). A scope the client is not allowed is refused (invalid_scope).
//
// The authorization code grant needs no browser: GET /interaction/<uid>?login=<account> logs
// that account in (or the only user configured) and consents to what was asked, then redirects
// back to the authorization endpoint, which redirects to the client's redirect_uri with a code.

import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [configPath, portArgument] = process.argv.slice(2);
if (!configPath) {
  console.error('usage: node provider.mjs CONFIG.json [PORT]');
  process.exit(2);
}
const config = JSON.parse(readFileSync(configPath, 'utf8'));
const port = Number(portArgument ?? process.env.OIDC_PROVIDER_PORT ?? config.port);
if (!Number.isInteger(port) || port <= 0) {
  console.error('no port: give one on the command line, in $OIDC_PROVIDER_PORT or config.port');
  process.exit(2);
}
const issuer = config.issuer ?? `http://127.0.0.1:${port}`;

// the packages lie in a cache folder the harness names ($OIDC_NODE_MODULES, keyed by the lock
// file); without it, in node_modules beside this file (`npm ci` here, for a run by hand)
async function loadOidcProvider() {
  const modules = process.env.OIDC_NODE_MODULES;
  if (!modules) return import('oidc-provider');
  const entry = createRequire(join(modules, 'noop.js')).resolve('oidc-provider');
  return import(pathToFileURL(entry).href);
}
const { default: Provider, errors } = await loadOidcProvider();

const jwks = JSON.parse(readFileSync(config.jwks_file, 'utf8'));
const ttl = config.access_token_ttl ?? 600;
const clients = config.clients ?? [];
const publicClients = config.public_clients ?? [];
const users = config.users ?? {};
const audiences = config.audiences ?? {};
const allowed = new Map([...clients, ...publicClients].map((c) => [c.client_id, c.scopes ?? []]));
const clientGroups = new Map(clients.map((c) => [c.client_id, c.groups ?? []]));

const provider = new Provider(issuer, {
  jwks,
  clients: [
    ...clients.map((c) => ({
      client_id: c.client_id,
      client_secret: c.client_secret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: c.token_endpoint_auth_method ?? 'client_secret_basic',
    })),
    ...publicClients.map((c) => ({
      client_id: c.client_id,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      redirect_uris: c.redirect_uris,
      token_endpoint_auth_method: 'none',
    })),
  ],
  // a client's scopes are checked in getResourceServerInfo (oidc-provider takes in a client's
  // "scope" metadata only the scopes of its `scopes` setting, which are OpenID scopes)
  // the state of a run lives in memory (oidc-provider's default adapter): a restart forgets it
  cookies: { keys: ['rag-hub-test-cookie-key'] },
  pkce: { required: () => true },
  responseTypes: ['code'],
  scopes: ['openid'],
  claims: { openid: ['sub', 'groups'] },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (ctx, client, oneOf) => oneOf ?? config.default_resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resource, client) => {
        const scopes = allowed.get(client.clientId) ?? [];
        const asked = (ctx.oidc.params.scope ?? '').split(' ').filter(Boolean);
        const refused = asked.filter((s) => s !== 'openid' && !scopes.includes(s));
        if (refused.length) {
          throw new errors.InvalidScope('requested scope is not allowed', refused.join(' '));
        }
        return {
          scope: scopes.join(' '),
          audience: audiences[resource] ?? resource,
          accessTokenTTL: ttl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  extraTokenClaims: async (ctx, token) => {
    if (token.accountId) return { groups: users[token.accountId]?.groups ?? [] };
    return { groups: clientGroups.get(token.clientId) ?? [] };
  },
  findAccount: async (ctx, id) => {
    if (!(id in users)) return undefined;
    return {
      accountId: id,
      claims: async () => ({ sub: id, groups: users[id].groups ?? [], ...users[id].claims }),
    };
  },
  interactions: { url: async (ctx, interaction) => `/interaction/${interaction.uid}` },
  ttl: {
    AccessToken: ttl, ClientCredentials: ttl, IdToken: ttl, Interaction: 600, Session: 3600, Grant: 3600,
  },
});

// login and consent without a page: the account named (?login=) or the only one configured
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session, grantId } = details;
  if (prompt.name === 'login') {
    const wanted = new URL(req.url, issuer).searchParams.get('login');
    const names = Object.keys(users);
    const accountId = wanted ?? (names.length === 1 ? names[0] : undefined);
    if (!accountId || !(accountId in users)) {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`unknown account ${accountId}: pass ?login=<one of ${names.join(', ')}>`);
      return;
    }
    await provider.interactionFinished(req, res, { login: { accountId } }, {
      mergeWithLastSubmission: false,
    });
    return;
  }
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
  if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
  if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, {
    mergeWithLastSubmission: true,
  });
}

const handle = provider.callback();
const server = createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interact(req, res).catch((error) => {
      res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`${error.name}: ${error.message}`);
    });
    return;
  }
  handle(req, res);
});
server.listen(port, '127.0.0.1', () => {
  const kids = jwks.keys.map((key) => key.kid).join(', ');
  console.log(`oidc-provider listening: ${issuer} (keys ${kids})`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => process.exit(0));
}
// a test run killed outright leaves no provider behind: it ends when its parent does
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 500).unref();
