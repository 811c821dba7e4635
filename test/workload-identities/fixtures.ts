import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { IssuerKind, TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { TrustedIssuersRepository } from '../../src/federation/trusted-issuers.repository';
import { TokenService } from '../../src/auth/token.service';
import { UnitOfWork } from '../../src/database/unit-of-work';
import { bearer } from '../support/http-assertions';
import { TEST_ISSUER, TestApp, TestUser } from '../support/test-app';

export const GITHUB = 'https://token.actions.githubusercontent.com';

/** Every field of a workload identity record (docs/workload-identities.md#the-workload-identity-object). */
export const IDENTITY_FIELDS = [
  'id',
  'organization_id',
  'user_id',
  'label',
  'issuer',
  'subject',
  'conditions',
  'scopes',
  'status',
  'created_at',
  'updated_at',
  'expires_at',
  'last_used_at',
  'last_used_ip',
  'revoked_at',
];

export interface IdentityBody {
  id: string;
  organization_id: string;
  user_id: string;
  label: string;
  issuer: string;
  subject: string;
  conditions: Record<string, string>;
  scopes: string[];
  status: string;
  created_at: string;
  updated_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  last_used_ip: string | null;
  revoked_at: string | null;
}

/**
 * A trusted issuer of the organization, stored straight through federation's repository: no discovery, so no issuer
 * needs to answer (the CLI's `trusted-issuer add` is tested in test/federation/).
 */
export async function trustIssuer(
  t: TestApp,
  organizationId: string,
  fields: { issuer?: string; kind?: IssuerKind; audience?: string } = {},
): Promise<TrustedIssuer> {
  const kind = fields.kind ?? 'workloads';
  const entry = Object.assign(new TrustedIssuer(), {
    id: randomUUID(),
    organizationId,
    issuer: fields.issuer ?? GITHUB,
    kind,
    audience: fields.audience ?? (kind === 'people' ? 'console-client' : TEST_ISSUER),
    clientId: kind === 'people' ? 'console-client' : null,
    clientSecretEncrypted: null,
    tokenEndpointAuth: kind === 'people' ? 'client_secret_basic' : null,
    emailDomains: [],
    allowedOrigins: [],
    jitRole: null,
    createdAt: new Date(),
  });
  await t.get(UnitOfWork).run((tx) => t.get(TrustedIssuersRepository).insert(entry, tx));
  return entry;
}

/** POST /v1/workload-identities as `user`; `fields` over a valid body naming `issuer`. Asserts 201. */
export async function createIdentity(
  t: TestApp,
  user: Pick<TestUser, 'token'>,
  issuer: Pick<TrustedIssuer, 'id'>,
  fields: Record<string, unknown> = {},
): Promise<IdentityBody> {
  const response = await t
    .http()
    .post('/v1/workload-identities')
    .set(bearer(user.token))
    .send({ ...validBody(issuer), ...fields });
  if (response.status !== 201) throw new Error(`POST /v1/workload-identities: ${response.status} ${response.text}`);
  return response.body.workload_identity as IdentityBody;
}

/**
 * What Gatehouse's API answers an access token minted through the identity as the token exchange mints one (for
 * `owner`, with the identity's default scope api_keys:read): GET /v1/user-api-keys, 200 while the identity is live,
 * else 401 and why (the token authenticator's reason).
 */
export async function identityTokenAnswer(
  t: TestApp,
  identity: Pick<IdentityBody, 'id'>,
  owner: Pick<TestUser, 'userId' | 'organizationId'>,
): Promise<{ status: number; reason?: string }> {
  const token = await t.get(TokenService).mint({
    tokenUse: 'access',
    userId: owner.userId,
    organizationId: owner.organizationId,
    credentialId: identity.id,
    workloadIdentity: true,
    scope: 'api_keys:read',
    lifetimeSeconds: 300,
  });
  const response = await t.http().get('/v1/user-api-keys').set(bearer(token));
  return response.status === 200 ? { status: 200 } : { status: response.status, reason: response.body.reason };
}

export function validBody(issuer: Pick<TrustedIssuer, 'id'>): Record<string, unknown> {
  return {
    label: 'deploys',
    trusted_issuer_id: issuer.id,
    subject: 'repo:acme/deploy:environment:production',
    conditions: { repository: 'acme/deploy' },
    scopes: ['api_keys:read'],
  };
}

/**
 * Makes the identity one that existed before identities were named (migration 1765800000000): reachable by its issuer
 * and subject alone, without `client_id` (docs/workload-identities.md#naming-the-identity).
 */
export async function reachableBySubject(t: TestApp, id: string): Promise<void> {
  await t.get(DataSource).query(`UPDATE workload_identities SET reachable_by = 'subject' WHERE id = '${id}'`);
}

/** The rows of workload_identities (a count that an error left nothing behind). */
export async function identityCount(t: TestApp): Promise<number> {
  const rows: Array<{ n: number | string }> = await t
    .get(DataSource)
    .query('SELECT COUNT(*) AS n FROM workload_identities');
  return Number(rows[0].n);
}

/** The audit entries of workload identities with this target, oldest first. */
export async function identityAudit(t: TestApp, id: string): Promise<Array<Record<string, unknown>>> {
  return t.get(DataSource).query(
    `SELECT action, reason, organization_id, actor_user_id, actor_api_key_id, target_type, target_id
       FROM audit_events WHERE target_id = '${id}' AND action LIKE 'workload_identity.%' ORDER BY occurred_at, id`,
  );
}
