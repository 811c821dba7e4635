import { Injectable } from '@nestjs/common';
import { ExpiringKey, ExpiringKeysRepository } from './expiring-keys.repository';

export type { ExpiringKey };

/** The largest id: a page that starts at an instant with it starts strictly after that instant. */
const AFTER_EVERY_ID = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
const PAGE = 500;

/** The keys that expire within a window, published for webhooks' expiry notices (docs/webhooks.md#events). */
@Injectable()
export class ExpiringKeysService {
  constructor(private readonly keys: ExpiringKeysRepository) {}

  /** Every ACTIVE key of these organizations whose `expires_at` is after `after` and at the latest `until`, by page. */
  async *between(organizationIds: readonly string[], after: Date, until: Date): AsyncGenerator<ExpiringKey[]> {
    if (organizationIds.length === 0) return;
    let from = { at: after, id: AFTER_EVERY_ID };
    for (;;) {
      const page = await this.keys.findPage(organizationIds, from, until, PAGE);
      if (page.length > 0) yield page;
      if (page.length < PAGE) return;
      const last = page[page.length - 1];
      from = { at: last.expiresAt, id: last.id };
    }
  }
}
