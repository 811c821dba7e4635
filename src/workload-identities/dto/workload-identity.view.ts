import { ApiProperty } from '@nestjs/swagger';
import type { TrustedIssuer } from '../../federation/trusted-issuer.entity';
import { CredentialView } from '../../credentials/dto/credential.view';
import type { WorkloadIdentity } from '../workload-identity.entity';
import { conditionsOf } from '../workload-identity-kind';

/** docs/workload-identities.md#the-workload-identity-object. */
export class WorkloadIdentityView extends CredentialView {
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

  static from(identity: WorkloadIdentity): WorkloadIdentityView {
    return Object.assign(CredentialView.fields(identity), {
      issuer: identity.issuer,
      subject: identity.subject,
      conditions: conditionsOf(identity),
    });
  }
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
