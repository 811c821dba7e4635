import { Injectable } from '@nestjs/common';

/**
 * The outbox's word to the dispatcher that deliveries were committed at this instance. The outbox is told of every
 * audit entry (AuditService depends on it) and the dispatcher records audit entries (`webhook.disabled`): through this
 * signal neither depends on the other.
 */
@Injectable()
export class WebhookWakeup {
  private listener: (() => void) | undefined;

  listen(listener: () => void): void {
    this.listener = listener;
  }

  wake(): void {
    this.listener?.();
  }
}
