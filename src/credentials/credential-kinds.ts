import { Injectable } from '@nestjs/common';
import type { Credential } from './credential.entity';
import type { CredentialsRepository } from './credentials.repository';

/**
 * Every kind of credential the application has: each kind's repository adds itself when it is made, so that a member's
 * removal revokes every kind (CredentialsService.revokeMemberCredentials) without naming them.
 */
@Injectable()
export class CredentialKinds {
  private readonly stores: Array<CredentialsRepository<Credential>> = [];

  add(store: CredentialsRepository<Credential>): void {
    this.stores.push(store);
    // In one order whatever the modules' order: the owner locks of a removal are always taken alike.
    this.stores.sort((a, b) => a.kind.name.localeCompare(b.kind.name));
  }

  all(): ReadonlyArray<CredentialsRepository<Credential>> {
    return this.stores;
  }
}
