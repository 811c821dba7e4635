import { ApiProperty } from '@nestjs/swagger';
import type { TrustedIssuer } from '../../federation/trusted-issuer.entity';
import { PageMetaView } from '../../common/pagination';
import { maskPermissions, Permission, PERMISSIONS } from '../../identity/roles';
import { displayStatus, WorkloadIdentity, WorkloadIdentityDisplayStatus } from '../workload-identity.entity';
import { conditionsOf } from '../workload-identity-rows';

/** docs/workload-identities.md#the-workload-identity-object. */
export class WorkloadIdentityView {
  @ApiProperty({ format: 'uuid', description: 'The tokens minted through it carry it as their client_id' })
  id: string;
  @ApiProperty({ format: 'uuid' })
  organization_id: string;
  @ApiProperty({ format: 'uuid', description: 'The owner: tokens minted through the identity act as this user' })
  user_id: string;
  @ApiProperty()
  label: string;
  @ApiProperty({
    description: "The trusted issuer's URL, compared exactly with the token's iss",
    example: 'https://token.actions.githubusercontent.com',
  })
  issuer: string;
  @ApiProperty({
    description: "Compared exactly with the token's sub",
    example: 'repo:acme/deploy:ref:refs/heads/main',
  })
  subject: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'Exact matches on other string claims, by claim name ({} when none)',
    example: { repository: 'acme/deploy' },
  })
  conditions: Record<string, string>;
  @ApiProperty({
    type: [String],
    enum: PERMISSIONS,
    description: 'The permissions its tokens may use, in catalogue order',
    example: ['integrations:read'],
  })
  scopes: Permission[];
  @ApiProperty({
    enum: ['ACTIVE', 'REVOKED', 'EXPIRED'],
    description: 'EXPIRED once expires_at has passed (REVOKED wins)',
  })
  status: WorkloadIdentityDisplayStatus;
  @ApiProperty({ format: 'date-time' })
  created_at: string;
  @ApiProperty({ format: 'date-time' })
  updated_at: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: String, description: 'null: it does not expire' })
  expires_at: string | null;
  @ApiProperty({
    format: 'date-time',
    nullable: true,
    type: String,
    description: 'The last token exchange through it; null until the first',
  })
  last_used_at: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    maxLength: 45,
    description: 'The client address of that exchange (as the rate limits see it, TRUST_PROXY applied)',
    example: '203.0.113.7',
  })
  last_used_ip: string | null;

  static from(identity: WorkloadIdentity): WorkloadIdentityView {
    return {
      id: identity.id,
      organization_id: identity.organizationId,
      user_id: identity.userId,
      label: identity.label,
      issuer: identity.issuer,
      subject: identity.subject,
      conditions: { ...conditionsOf(identity) },
      scopes: maskPermissions(identity.scopes),
      status: displayStatus(identity, Date.now()),
      created_at: identity.createdAt.toISOString(),
      updated_at: identity.updatedAt.toISOString(),
      expires_at: identity.expiresAt === null ? null : identity.expiresAt.toISOString(),
      last_used_at: identity.lastUsedAt === null ? null : identity.lastUsedAt.toISOString(),
      last_used_ip: identity.lastUsedIp,
    };
  }
}

export class WorkloadIdentityResponse {
  @ApiProperty({ type: () => WorkloadIdentityView })
  workload_identity: WorkloadIdentityView;
}

export class WorkloadIdentityListResponse extends PageMetaView {
  @ApiProperty({ type: () => [WorkloadIdentityView] })
  workload_identities: WorkloadIdentityView[];
}

/** An identity as the organization's admins see it: with its owner's e-mail address. */
export class OrganizationWorkloadIdentityView extends WorkloadIdentityView {
  @ApiProperty({ nullable: true, type: String, description: "The owner's e-mail address", example: 'dev@acme.test' })
  owner_email: string | null;

  static withOwner(identity: WorkloadIdentity, emails: ReadonlyMap<string, string>): OrganizationWorkloadIdentityView {
    return { ...WorkloadIdentityView.from(identity), owner_email: emails.get(identity.userId) ?? null };
  }
}

export class OrganizationWorkloadIdentityResponse {
  @ApiProperty({ type: () => OrganizationWorkloadIdentityView })
  workload_identity: OrganizationWorkloadIdentityView;
}

export class OrganizationWorkloadIdentityListResponse extends PageMetaView {
  @ApiProperty({ type: () => [OrganizationWorkloadIdentityView] })
  workload_identities: OrganizationWorkloadIdentityView[];
}

/** A trusted issuer an identity may name: what a workload needs to ask its platform for a token. */
export class WorkloadIssuerView {
  @ApiProperty({ format: 'uuid', description: 'trusted_issuer_id of a new identity' })
  id: string;
  @ApiProperty({ example: 'https://token.actions.githubusercontent.com' })
  issuer: string;
  @ApiProperty({
    description: "The aud the workload's token must carry (ask the platform for a token with this audience)",
    example: 'https://gatehouse.example.com',
  })
  audience: string;

  static from(entry: TrustedIssuer): WorkloadIssuerView {
    return { id: entry.id, issuer: entry.issuer, audience: entry.audience };
  }
}

export class WorkloadIssuerListResponse {
  @ApiProperty({ type: () => [WorkloadIssuerView] })
  trusted_issuers: WorkloadIssuerView[];
}
