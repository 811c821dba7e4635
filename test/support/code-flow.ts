import { pkce } from './client-documents';
import { bearer } from './http-assertions';
import type { TestApp, TestUser } from './test-app';

/**
 * The authorization code grant through the app's routes (docs/mcp.md#authorization-code), as a client and a person
 * would go through it: GET /oauth/authorize, the consent page's decision, POST /oauth/token.
 */
export const FORM = 'application/x-www-form-urlencoded';

export interface CodeRequest {
  clientId: string;
  redirectUri: string;
  resource: string;
  scope?: string;
  challenge?: string;
}

export function authorizeQuery(request: CodeRequest, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    response_type: 'code',
    client_id: request.clientId,
    redirect_uri: request.redirectUri,
    code_challenge: request.challenge ?? pkce().challenge,
    code_challenge_method: 'S256',
    state: 'st',
    resource: request.resource,
    ...(request.scope === undefined ? {} : { scope: request.scope }),
    ...overrides,
  };
}

/** GET /oauth/authorize, asserting the redirect to the consent page: its signed `request`. */
export async function consentRequest(t: TestApp, request: CodeRequest): Promise<string> {
  const started = await t.http().get('/oauth/authorize').query(authorizeQuery(request)).expect(302);
  const consent = new URL(started.headers.location);
  if (consent.pathname !== '/console/consent') throw new Error(`not the consent page: ${consent.href}`);
  return consent.searchParams.get('request')!;
}

/** Authorize and Allow as `who`: the code the redirect carries, and its verifier. */
export async function allowedCode(
  t: TestApp,
  who: TestUser,
  request: CodeRequest,
): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkce();
  const signed = await consentRequest(t, { ...request, challenge });
  const decided = await t
    .http()
    .post('/v1/oauth/consent')
    .set(bearer(who.token))
    .send({ request: signed, decision: 'allow' })
    .expect(200);
  const code = new URL(decided.body.redirect_to as string).searchParams.get('code');
  if (code === null) throw new Error(`no code: ${decided.body.redirect_to as string}`);
  return { code, verifier };
}

export function tokenRequest(t: TestApp, form: Record<string, string>, authorization?: string) {
  const request = t.http().post('/oauth/token').type(FORM);
  return (authorization === undefined ? request : request.set('Authorization', authorization)).send(
    new URLSearchParams(form).toString(),
  );
}

export const basic = (id: string, secret: string): string =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
