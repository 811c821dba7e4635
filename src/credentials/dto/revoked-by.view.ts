import { ApiProperty } from '@nestjs/swagger';
import type { Revoker } from '../credentials.service';

/** Who revoked a credential and why, from its revocation's audit entry (docs/api.md#who-revoked-a-credential). */
export class RevokedByView {
  @ApiProperty({ format: 'date-time', description: 'When the revocation was recorded' })
  at: string;
  @ApiProperty({
    nullable: true,
    type: String,
    description:
      'Why: user (its owner), admin (organization key management), rotated, exposed (a leak report), member_removed, trusted_issuer_removed, …',
    example: 'admin',
  })
  reason: string | null;
  @ApiProperty({
    format: 'uuid',
    nullable: true,
    type: String,
    description: 'The person who revoked it; null: nobody did (a report, a removal)',
  })
  user_id: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    description: "That person's e-mail address",
    example: 'admin@acme.test',
  })
  email: string | null;
  @ApiProperty({ format: 'uuid', nullable: true, type: String, description: 'The key whose token they used, if one' })
  api_key_id: string | null;

  static from(revoker: Revoker): RevokedByView {
    return {
      at: revoker.at.toISOString(),
      reason: revoker.reason,
      user_id: revoker.userId,
      email: revoker.email,
      api_key_id: revoker.apiKeyId,
    };
  }
}

export class RevokedByResponse {
  @ApiProperty({
    type: RevokedByView,
    nullable: true,
    description: 'null while the credential is not revoked, or when its audit entry is past retention',
  })
  revoked_by: RevokedByView | null;
}
