import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { Allow, ArrayUnique, IsArray, IsIn, IsString, IsUUID, Validate } from 'class-validator';
import { ExpiresAt, LabelConstraint } from '../../credentials/dto/credential-fields';
import { Permission, PERMISSIONS } from '../../identity/roles';
import {
  MAX_CLAIM_NAME_LENGTH,
  MAX_CONDITION_VALUE_LENGTH,
  MAX_CONDITIONS,
  MAX_SUBJECT_LENGTH,
  RESERVED_CLAIMS,
} from '../workload-identity-matching';

/**
 * POST /v1/workload-identities (docs/workload-identities.md#post-v1workload-identities). Types are checked here (400
 * `invalid request parameters`); the subject's and the conditions' rules, each with its own message, by the service.
 */
export class CreateWorkloadIdentityDto {
  @ApiProperty({
    maxLength: 255,
    description: 'Human-readable name; at most 255 Unicode characters',
    example: 'deploys',
  })
  @IsString()
  @Validate(LabelConstraint)
  label: string;

  @ApiProperty({
    format: 'uuid',
    description:
      "One of the organization's trusted issuers of kind workloads (GET /v1/workload-identities/trusted-issuers)",
  })
  @IsUUID('all')
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value))
  trusted_issuer_id: string;

  @ApiProperty({
    maxLength: MAX_SUBJECT_LENGTH,
    description: "Compared exactly with the token's sub: no wildcard, nothing trimmed",
    example: 'repo:acme/deploy:environment:production',
  })
  @IsString()
  subject: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', minLength: 1, maxLength: MAX_CONDITION_VALUE_LENGTH },
    maxProperties: MAX_CONDITIONS,
    description:
      `Exact matches on other string claims of the token, by claim name (1 to ${MAX_CLAIM_NAME_LENGTH} characters; ` +
      `not ${RESERVED_CLAIMS.join(', ')}). Absent: none.`,
    example: { repository: 'acme/deploy', ref: 'refs/heads/main' },
  })
  @Allow()
  // The body's value itself: class-transformer would rebuild the object and silently drop claim names that shadow
  // Object.prototype's methods (`toString`), widening the identity. The service checks it instead (and
  // ConditionNamesInterceptor the names the validation pipe deletes).
  @Transform(({ obj }: { obj: Record<string, unknown> }) => obj.conditions, { toClassOnly: true })
  conditions?: unknown;

  @ApiProperty({
    type: [String],
    enum: PERMISSIONS,
    uniqueItems: true,
    description:
      'Distinct permission names the tokens minted through the identity may use (also within the owner role); each ' +
      'one the request itself must have, else 403. [] is allowed.',
    example: ['integrations:read'],
  })
  @IsArray()
  @ArrayUnique()
  @IsIn(PERMISSIONS, { each: true })
  scopes: Permission[];

  @ExpiresAt(
    'When the identity stops working: an ISO 8601 timestamp with a zone designator, at least 60 s ahead, or null for ' +
      "none. Absent or null under an organization key policy: creation + the policy's maximum; a later one is refused.",
  )
  expires_at?: string | null;
}
