import { Injectable } from '@nestjs/common';
import type { KindStore } from './credential-kind';

/**
 * Every kind of credential the application has: each kind's repository adds itself when it is made, so that a member's
 * removal revokes every kind (CredentialsService.revokeMemberCredentials) without naming them.
 */
@Injectable()
export class CredentialKinds {
  private readonly stores: KindStore[] = [];

  add(store: KindStore): void {
    this.stores.push(store);
    // In one order whatever the modules' order: the owner locks of a removal are always taken alike.
    this.stores.sort((a, b) => a.kind.name.localeCompare(b.kind.name));
  }

  all(): readonly KindStore[] {
    return this.stores;
  }
}
