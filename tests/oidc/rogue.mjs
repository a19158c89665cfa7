// An OpenID Connect provider on loopback that mints the ID tokens a real one would not, for
// the console's sign-in refusal tests: its discovery document and keys are served as any
// provider's, and its token endpoint answers the code `<kind>.<nonce>` with a token of that
// kind, for the nonce of the sign-in (`good`, `expired`, `tampered`, `audience`, `issuer`,
// `nonce`), signed with an RSA key it generates at start. A code is taken once: a second use
// is `invalid_grant`, as at a real provider.
//
// It prints {"issuer": …} on a line and serves until its standard input closes.
import http from 'node:http';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
const jwk = { ...(await exportJWK(publicKey)), kid: 'rogue', alg: 'RS256', use: 'sig' };
const used = new Set();

const server = http.createServer(async (request, response) => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const url = new URL(request.url, issuer);
  const json = (status, body) => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  if (url.pathname === '/.well-known/openid-configuration') {
    return json(200, {
      issuer,
      authorization_endpoint: `${issuer}/auth`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/jwks`,
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
    });
  }
  if (url.pathname === '/jwks') return json(200, { keys: [jwk] });
  if (url.pathname === '/token' && request.method === 'POST') {
    let body = '';
    for await (const chunk of request) body += chunk;
    const code = new URLSearchParams(body).get('code') ?? '';
    if (used.has(code)) {
      return json(400, { error: 'invalid_grant', error_description: 'the code was used already' });
    }
    used.add(code);
    const [kind, nonce] = code.split('.');
    return json(200, { access_token: 'rogue', token_type: 'Bearer', id_token: await idToken(issuer, kind, nonce) });
  }
  return json(404, { error: 'not_found' });
});

async function idToken(issuer, kind, nonce) {
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    nonce: kind === 'nonce' ? 'another-sign-in' : nonce,
    preferred_username: 'eve',
    groups: ['rummy-admins'],
  };
  const signed = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: 'rogue' })
    .setIssuer(kind === 'issuer' ? 'http://elsewhere.invalid' : issuer)
    .setSubject('sub-eve')
    .setAudience(kind === 'audience' ? 'another-client' : 'rummy')
    .setIssuedAt(kind === 'expired' ? now - 7200 : now)
    .setExpirationTime(kind === 'expired' ? now - 3600 : now + 300)
    .sign(privateKey);
  if (kind !== 'tampered') return signed;
  // The same signature over other claims: another name.
  const [header, payload, signature] = signed.split('.');
  const altered = JSON.parse(Buffer.from(payload, 'base64url'));
  altered.preferred_username = 'mallory';
  return [header, Buffer.from(JSON.stringify(altered)).toString('base64url'), signature].join('.');
}

server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ issuer: `http://127.0.0.1:${server.address().port}` }));
});
process.stdin.on('data', () => {});
process.stdin.on('end', () => process.exit(0));
