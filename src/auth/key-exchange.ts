import { Injectable } from '@nestjs/common';
import { ApiKeysService, KeyCredential } from '../api-keys/api-keys.service';
import type { ParsedApiKey } from '../api-keys/api-key-codec';
import { API_KEY_CHALLENGE, ErrorCode, Messages } from '../common/errors';
import { CountedRefusal } from './exchange-outcome';

/** Why an exchange was refused, as the audit trail records it. */
export type ExchangeFailureReason =
  | 'missing_header'
  | 'wrong_scheme'
  | 'malformed_key'
  | 'invalid_credentials'
  | 'revoked'
  | 'expired'
  | 'not_a_member'
  | 'address_not_allowed';

type KeyIds = { id: string; organizationId: string; userId: string };

/** A refused POST /v1/token: the exact 401 of docs/api.md#errors, plus what the audit trail keeps. */
export class ExchangeRefused extends CountedRefusal {
  /** The key id the presented value named, when it was well-formed (not a secret). */
  attemptedKeyId?: string;

  constructor(
    readonly reason: ExchangeFailureReason,
    message: string,
    readonly key?: KeyIds,
  ) {
    super(ErrorCode.UNAUTHENTICATED, message, { headers: { ...API_KEY_CHALLENGE } });
  }
}

/**
 * The right key from an address outside its allowlist (docs/api.md#allowlists-and-rate-limits): 403, recorded in the
 * audit trail and counted by the failure limit as a refusal is.
 */
export class AddressNotAllowed extends CountedRefusal {
  readonly reason = 'address_not_allowed';
  readonly attemptedKeyId: string;

  constructor(readonly key: KeyIds) {
    super(ErrorCode.PERMISSION_DENIED, Messages.apiKeyNotAllowedFromAddress);
    this.attemptedKeyId = key.id;
  }
}

/**
 * The rules of the token path (docs/api.md#post-v1token): which key may be exchanged, and which key's access tokens
 * still work. The key and its owner's membership come from api-keys in one query (ApiKeysService.credential).
 */
@Injectable()
export class KeyExchangeRules {
  constructor(private readonly apiKeys: ApiKeysService) {}

  /**
   * Steps 4-5: unknown id or wrong secret -> invalid credentials; a revoked key -> revoked; no whole second left
   * -> expired. The secret is compared in constant time, for an unknown id too (ApiKeysService.secretMatches).
   */
  async checkKey(parsed: ParsedApiKey, nowMs: number): Promise<KeyCredential> {
    const found = await this.apiKeys.credential(parsed.keyId);
    const matches = this.apiKeys.secretMatches(parsed.secret, found?.key.secretHash);
    if (found === undefined || !matches) {
      throw new ExchangeRefused('invalid_credentials', Messages.invalidApiKeyCredentials);
    }
    const { key } = found;
    const ids = { id: key.id, organizationId: key.organizationId, userId: key.userId };
    if (key.status !== 'ACTIVE') throw new ExchangeRefused('revoked', Messages.apiKeyRevoked, ids);
    // Tokens count whole seconds and never outlive their key: a key in its last second can mint none.
    if (key.expiresAtMs !== null && key.expiresAtMs < (Math.floor(nowMs / 1000) + 1) * 1000) {
      throw new ExchangeRefused('expired', Messages.apiKeyExpired, ids);
    }
    return found;
  }
}
