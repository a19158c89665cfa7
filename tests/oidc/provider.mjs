// A real OpenID Connect provider on loopback for the console's sign-in tests: panva's
// oidc-provider with its own login page (devInteractions), one confidential client
// (`rummy` / `rummy-test-secret`, PKCE required) and three people with groups.
//
// It listens on 127.0.0.1 at a free port and prints {"issuer": …} on a line; it then reads
// the client's redirect URL from its standard input (the test starts rummy in between, whose
// port that URL holds), prints {"ready": true}, and serves until its input closes.
import http from 'node:http';
import readline from 'node:readline';
import Provider from 'oidc-provider';

const PEOPLE = {
  ada: { preferred_username: 'ada', name: 'Ada Admin', groups: ['rummy-admins', 'staff'] },
  mo: { preferred_username: 'mo', name: 'Mo Member', groups: ['web-team'] },
  bo: { preferred_username: 'bo', name: 'Bo Visitor', groups: ['visitors'] },
};

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  console.log(JSON.stringify({ issuer }));
  const input = readline.createInterface({ input: process.stdin });
  let started = false;
  input.on('line', (redirect) => {
    if (started) return;
    started = true;
    server.on('request', provider(issuer, redirect.trim()).callback());
    console.log(JSON.stringify({ ready: true }));
  });
  input.on('close', () => process.exit(0));
});

function provider(issuer, redirect) {
  return new Provider(issuer, {
    clients: [{
      client_id: 'rummy',
      client_secret: 'rummy-test-secret',
      redirect_uris: [redirect],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    pkce: { required: () => true },
    claims: {
      openid: ['sub'],
      profile: ['preferred_username', 'name', 'groups'],
      email: ['email'],
    },
    // The claims of the scopes asked for go into the ID token itself, as the big providers
    // (Keycloak, Entra ID) put them.
    conformIdTokenClaims: false,
    cookies: { keys: ['rummy-oidc-test-cookies'] },
    async findAccount(_ctx, id) {
      const person = PEOPLE[id];
      if (!person) return undefined;
      return { accountId: id, claims: async () => ({ sub: `sub-${id}`, ...person }) };
    },
    // A first-party client: no consent page, the scopes it asks for are granted.
    async loadExistingGrant(ctx) {
      const { Grant } = ctx.oidc.provider;
      const existing = ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (existing) return Grant.find(existing);
      const grant = new Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid profile email');
      await grant.save();
      return grant;
    },
  });
}
