import { AppError } from '../common/errors';
import type { CredentialKind } from '../credentials/credential-kind';
import { ApiKey } from './api-key.entity';

/** The API key as a kind of credential (docs/adr/0052-one-credential-core.md); its rows are read through ApiKey. */
export const API_KEY_KIND: CredentialKind<ApiKey> = {
  name: 'api_key',
  revokedAction: 'api_key.revoked',
  entity: ApiKey,
  // migration 1764810000000
  organizationIndexes: { active: 'api_keys_org_active', all: 'api_keys_org_newest' },
  ownerLockClass: 0x61706b79,
  keepsIp: true,
  keepsUserAgent: true,
  notFound: () => new AppError('api_key_not_found'),
};
