import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
import { AuditService } from '../../audit/audit.service';
import type { RequestContext } from '../../audit/request-context';
import { InjectConfig, InjectSecrets } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import type { Secrets } from '../../config/local-secrets';
import { UnitOfWork } from '../../database/unit-of-work';
import { ApiKeyCodec, ParsedApiKey } from '../api-key-codec';
import { SecretHasher } from '../../common/secret-hasher';
import { ExposedKeysRepository } from './exposed-keys.repository';

/**
 * Reports of exposed keys (docs/api.md#post-v1api-keysexposed): every real ACTIVE key revoked at once; the answer tells
 * nothing by its content or time (docs/adr/0020-exposed-key-reports-answer-at-a-floor.md).
 */
@Injectable()
export class ExposedKeysService {
  private readonly logger = new Logger(ExposedKeysService.name);
  private readonly codec: ApiKeyCodec;
  private readonly hasher: SecretHasher;
  /** What the secret of an unknown key id is compared with: the hash of a secret never issued. */
  private readonly unknownKeyHash: string;
  private readonly minResponseMs: number;

  constructor(
    private readonly keys: ExposedKeysRepository,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    @InjectConfig() config: AppConfiguration,
    @InjectSecrets() secrets: Secrets,
  ) {
    this.codec = new ApiKeyCodec(config.apiKeys.environment);
    this.hasher = new SecretHasher(secrets.apiKeyPepper);
    this.unknownKeyHash = this.hasher.hash(ApiKeyCodec.newSecret());
    this.minResponseMs = config.exposedReportMinResponseMs;
  }

  /** Revokes (committed before it returns), then answers no sooner than EXPOSED_REPORT_MIN_RESPONSE_MS, failures too. */
  async report(values: readonly string[], request: RequestContext): Promise<void> {
    const answerAt = performance.now() + this.minResponseMs;
    try {
      await this.revokeExposed(values, request);
    } finally {
      const early = answerAt - performance.now();
      if (early > 0) await sleep(early);
      else if (this.minResponseMs > 0) {
        // The floor no longer hides the work: the answer's time may tell whether a key was revoked.
        this.logger.warn(
          { overrunMs: Math.round(-early), minResponseMs: this.minResponseMs },
          'an exposed-key report took longer than EXPOSED_REPORT_MIN_RESPONSE_MS',
        );
      }
    }
  }

  private async revokeExposed(values: readonly string[], request: RequestContext): Promise<void> {
    // Each distinct value once; only well-formed keys of this environment go further (no database
    // work for the rest, which the reporter can tell apart by itself: the format is public).
    const presented: ParsedApiKey[] = [];
    for (const value of new Set(values)) {
      const parsed = this.codec.parse(value);
      if (parsed !== null) presented.push(parsed);
    }
    if (presented.length === 0) return;

    // One lookup for the whole report, and one constant-time comparison per entry, against a
    // stand-in hash when the id is unknown: the same work whether the keys exist or not.
    const stored = new Map(
      (await this.keys.findSecretsByIds([...new Set(presented.map((key) => key.keyId))])).map((key) => [key.id, key]),
    );
    const exposed = new Set<string>();
    for (const { keyId, secret } of presented) {
      const key = stored.get(keyId);
      const matches = this.hasher.matches(secret, key?.secretHash ?? this.unknownKeyHash);
      if (matches && key !== undefined && key.status === 'ACTIVE') exposed.add(key.id);
    }
    if (exposed.size === 0) return;

    // Every revocation and its audit entry in one transaction: all stored, or none.
    const at = new Date();
    const revoked = await this.unitOfWork.run(async (tx) => {
      const changed = await this.keys.revokeExposed([...exposed], at, tx);
      for (const key of changed) {
        await this.audit.record(
          {
            action: 'api_key.revoked',
            reason: 'exposed',
            organizationId: key.organizationId,
            targetType: 'api_key',
            targetId: key.id,
            request,
          },
          tx,
        );
      }
      return changed;
    });
    if (revoked.length > 0) {
      this.logger.log({ apiKeyIds: revoked.map((key) => key.id) }, 'api keys revoked as exposed');
    }
  }
}
