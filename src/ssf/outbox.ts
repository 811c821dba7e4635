import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { AuditEvent } from '../audit/audit-event.entity';
import type { AuditObserver } from '../audit/observer';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Transaction, UnitOfWork } from '../database/unit-of-work';
import { isRole, roleMask, scopeString } from '../identity/roles';
import { CREDENTIAL_CHANGE, SsfEvent, TOKEN_CLAIMS_CHANGE } from './ssf-event.entity';
import { SsfRepository } from './ssf.repository';
import { WakeSignal } from './wake-signal';

/**
 * The outbox: every audit entry that revokes a key or a workload identity, ends a key at a rotation's grace, or changes
 * what a member may do becomes a CAEP event in the same transaction, whichever path made it (owner, admin, member
 * removal, exposed report, CLI), so no revocation commits without its event (docs/revocation-feed.md#events).
 */
@Injectable()
export class SsfOutbox implements AuditObserver {
  private readonly issuer: string;

  constructor(
    private readonly events: SsfRepository,
    private readonly signal: WakeSignal,
    private readonly unitOfWork: UnitOfWork,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.issuer = config.jwt.issuer;
  }

  async recorded(entries: readonly AuditEvent[], tx: Transaction | undefined): Promise<void> {
    const events = entries.flatMap((entry) => this.toEvents(entry));
    if (events.length === 0) return;
    if (tx === undefined) {
      await this.unitOfWork.run((own) => this.write(events, own));
      return;
    }
    await this.write(events, tx);
  }

  private async write(events: SsfEvent[], tx: Transaction): Promise<void> {
    await this.events.insert(events, tx, this.signal.channel);
    // SQLite: this process is the only writer. PostgreSQL's NOTIFY (sent by the insert) reaches this instance too.
    if (!this.signal.notified) this.unitOfWork.afterCommit(tx, () => this.signal.wake());
  }

  private toEvents(entry: AuditEvent): SsfEvent[] {
    const eventTimestamp = Math.floor(entry.occurredAt.getTime() / 1000);
    const event = (eventType: SsfEvent['eventType'], subject: object, payload: object): SsfEvent =>
      Object.assign(new SsfEvent(), {
        id: randomUUID(),
        eventType,
        subject: JSON.stringify(subject),
        payload: JSON.stringify(payload),
        occurredAt: entry.occurredAt,
      });
    // CAEP credential-change of one API key (a revocation, or a rotation's new expiry, below) or one workload identity
    // (a revocation): verifiers refuse the tokens whose client_id is its id (docs/adr/0038-workload-identities.md).
    const credentialChange = (type: string, id: string, change: Record<string, unknown>): SsfEvent =>
      event(
        CREDENTIAL_CHANGE,
        { format: 'opaque', id },
        { credential_type: type, ...change, event_timestamp: eventTimestamp },
      );
    const keyChange = (keyId: string, change: Record<string, unknown>): SsfEvent =>
      credentialChange('api_key', keyId, change);
    const revocation = { change_type: 'revoke', reason_admin: { en: entry.reason ?? 'revoked' } };
    if (entry.action === 'api_key.revoked' && entry.targetId !== null) return [keyChange(entry.targetId, revocation)];
    if (entry.action === 'workload_identity.revoked' && entry.targetId !== null) {
      return [credentialChange('workload_identity', entry.targetId, revocation)];
    }
    // A grant (docs/mcp.md#grants): verifiers refuse the tokens whose grant_id is its id.
    if (entry.action === 'grant.revoked' && entry.targetId !== null) {
      return [credentialChange('grant', entry.targetId, revocation)];
    }
    // A rotation's grace: tokens minted before it carry a later `exp` than the old key's new expiry, so verifiers learn
    // that expiry here (seconds, rounded down like a token's `exp`; docs/adr/0031-revocation-feed-in-production.md).
    const graceEnd = entry.action === 'api_key.rotated' ? entry.previousApiKeyExpiresAt : null;
    if (graceEnd !== null && entry.previousApiKeyId !== null) {
      return [
        keyChange(entry.previousApiKeyId, {
          change_type: 'update',
          reason_admin: { en: 'rotated' },
          expires_at: Math.floor(graceEnd.getTime() / 1000),
        }),
      ];
    }
    const member = entry.targetId !== null && entry.organizationId !== null;
    if (member && (entry.action === 'member.role_changed' || entry.action === 'member.removed')) {
      // A removed member may do nothing there any more: the empty scope.
      const role = entry.action === 'member.removed' ? null : entry.reason;
      const scope = role !== null && isRole(role) ? scopeString(roleMask(role)) : '';
      return [
        event(
          TOKEN_CLAIMS_CHANGE,
          { format: 'iss_sub', iss: this.issuer, sub: entry.targetId },
          { event_timestamp: eventTimestamp, claims: { org: entry.organizationId, scope } },
        ),
      ];
    }
    return [];
  }
}
