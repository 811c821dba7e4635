import { Injectable } from '@nestjs/common';
import type { AuditChanges } from '../audit/audit-event.entity';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { AppError } from '../common/errors';
import { UnitOfWork } from '../database/unit-of-work';
import { IdentityService } from '../identity/identity.service';
import { ApiKey, displayStatus } from './api-key.entity';
import { ApiKeysRepository, KeyChanges } from './api-keys.repository';
import { actor, ownedBy } from '../credentials/credential-owner';
import { CredentialsService } from '../credentials/credentials.service';
import type { KeyOwner } from './api-keys.service';
import { allowedCidrsOf, allowedCidrsToStore, KeyRateLimit, rateLimitOf } from './key-policies';

/** A PATCH's fields as the body gave them (syntax validated): absent stays as it is, null removes. */
export interface KeyUpdateInput {
  label?: string;
  allowedCidrs?: string[] | null;
  rateLimit?: KeyRateLimit | null;
}

/**
 * PATCH /v1/user-api-keys/{id} (docs/api.md#patch-v1user-api-keysid): the label and the policies of one of the caller's
 * usable keys, changed and recorded (`api_key.updated`) in one transaction. The secret, scopes and expiry never change:
 * a rotation makes a new key for those.
 */
@Injectable()
export class ApiKeyUpdatesService {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly credentials: CredentialsService,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    private readonly identity: IdentityService,
  ) {}

  async update(owner: KeyOwner, id: string, input: KeyUpdateInput, request?: RequestContext): Promise<ApiKey> {
    const key = await this.keys.findById(id);
    if (key === undefined || !ownedBy(key, owner)) throw new AppError('api_key_not_found');
    const now = new Date();
    if (displayStatus(key, now.getTime()) !== 'ACTIVE') throw keyNotActive();
    const changes: KeyChanges = {};
    if (input.label !== undefined) changes.label = input.label;
    if (input.allowedCidrs !== undefined) {
      // The organization's policy as it is now: a key may not lose its allowlist, or widen it to every address, under it.
      const organization = await this.identity.organizationById(owner.organizationId);
      changes.allowedCidrs = allowedCidrsToStore(input.allowedCidrs, organization);
    }
    if (input.rateLimit !== undefined) changes.rateLimit = input.rateLimit;
    const changed = changesOf(key, changes);
    // A body that changes nothing (empty, or every field as it is) records nothing (as PATCH /v1/organization).
    if (Object.keys(changed).length === 0) return this.credentials.withPendingUse(key);
    const updated = await this.unitOfWork.run(async (tx) => {
      const stored = await this.keys.update(owner, id, changes, now, tx);
      // Revoked, rotated without a grace or expired since it was read.
      if (stored === undefined) throw keyNotActive();
      await this.audit.record(
        {
          action: 'api_key.updated',
          ...actor(owner),
          targetType: 'api_key',
          targetId: id,
          changes: changed,
          request,
        },
        tx,
      );
      return stored;
    });
    return this.credentials.withPendingUse(updated);
  }
}

const keyNotActive = (): AppError => new AppError('api_key_not_active');

/** A rate limit as the API shows it. */
const rateLimitView = (limit: KeyRateLimit | null) =>
  limit === null ? null : { requests: limit.requests, window_seconds: limit.windowSeconds };

/**
 * What an update changes, as the API names the fields (`label`, `allowed_cidrs`, `rate_limit`), each with its value
 * before and after; a field given as it already is is left out. The audit entry's `changes` (never a secret: a key's
 * secret, scopes and expiry are not changed here).
 */
function changesOf(key: ApiKey, changes: KeyChanges): AuditChanges {
  const fields: AuditChanges = {};
  const compare = (field: string, before: unknown, after: unknown): void => {
    if (JSON.stringify(before) !== JSON.stringify(after)) fields[field] = { before, after };
  };
  if (changes.label !== undefined) compare('label', key.label, changes.label);
  if (changes.allowedCidrs !== undefined) {
    compare('allowed_cidrs', allowedCidrsOf(key.allowedCidrs), allowedCidrsOf(changes.allowedCidrs));
  }
  if (changes.rateLimit !== undefined) {
    compare('rate_limit', rateLimitView(rateLimitOf(key)), rateLimitView(changes.rateLimit));
  }
  return fields;
}
