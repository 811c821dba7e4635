import { Injectable } from '@nestjs/common';
import type { KindStore } from './credential-kind';

/**
 * Every kind of credential the application has: each kind's repository adds itself when it is made, so that a member's
 * removal revokes every kind (CredentialsService.revokeMemberCredentials) and a token's liveness reads its credential
 * (auth/credential-liveness.ts) without naming them.
 */
@Injectable()
export class CredentialKinds {
  private readonly stores: KindStore[] = [];

  add(store: KindStore): void {
    this.stores.push(store);
    // In one order whatever the modules' order: the owner locks of a removal are always taken alike.
    this.stores.sort((a, b) => a.kind.name.localeCompare(b.kind.name));
  }

  /** The kind a token's `client_type` names (its audit target type); undefined for a kind the application lacks. */
  of(name: string): KindStore | undefined {
    return this.stores.find((store) => store.kind.name === name);
  }

  all(): readonly KindStore[] {
    return this.stores;
  }
}
