import { ApiProperty } from '@nestjs/swagger';
import { maskPermissions, Permission, PERMISSIONS } from '../../identity/roles';
import { Credential, CredentialDisplayStatus, displayStatus } from '../credential.entity';

/** What every kind shows of a credential (docs/api.md#api-key-object, docs/workload-identities.md). */
export class CredentialView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ format: 'uuid' })
  organization_id: string;
  @ApiProperty({ format: 'uuid', description: 'The owner: tokens minted through it act as this user' })
  user_id: string;
  @ApiProperty({ description: '"" when none was given' })
  label: string;
  @ApiProperty({
    enum: ['ACTIVE', 'REVOKED', 'EXPIRED'],
    description: 'EXPIRED once expires_at has passed (REVOKED wins)',
  })
  status: CredentialDisplayStatus;
  @ApiProperty({
    type: [String],
    enum: PERMISSIONS,
    description: 'The permissions its tokens may use, in catalogue order',
    example: ['api_keys:read', 'integrations:read'],
  })
  scopes: Permission[];
  @ApiProperty({ format: 'date-time', nullable: true, type: String, description: 'null: it does not expire' })
  expires_at: string | null;
  @ApiProperty({ format: 'date-time' })
  created_at: string;
  @ApiProperty({ format: 'date-time' })
  updated_at: string;
  @ApiProperty({
    format: 'date-time',
    nullable: true,
    type: String,
    description: 'The last successful exchange through it (POST /v1/token or the token exchange); null until the first',
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
  @ApiProperty({
    format: 'date-time',
    nullable: true,
    type: String,
    description: 'When it was revoked (the owner, an admin, a rotation, a report or a removal); null while not revoked',
  })
  revoked_at: string | null;

  static fields(credential: Credential): CredentialView {
    return {
      id: credential.id,
      organization_id: credential.organizationId,
      user_id: credential.userId,
      label: credential.label,
      status: displayStatus(credential, Date.now()),
      scopes: maskPermissions(credential.scopes),
      expires_at: credential.expiresAt === null ? null : credential.expiresAt.toISOString(),
      created_at: credential.createdAt.toISOString(),
      updated_at: credential.updatedAt.toISOString(),
      last_used_at: credential.lastUsedAt === null ? null : credential.lastUsedAt.toISOString(),
      last_used_ip: credential.lastUsedIp,
      revoked_at: credential.revokedAt === null ? null : credential.revokedAt.toISOString(),
    };
  }
}
