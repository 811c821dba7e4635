import { randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectSecrets } from '../config/config.module';
import type { Secrets } from '../config/local-secrets';
import { SecretHasher } from '../common/secret-hasher';
import { ResourceServer } from './resource-server.entity';
import { ResourceServersRepository } from './resource-servers.repository';
import { UUID } from '../common/uuid';
import { DeclaredScope, scopesProblem } from './scopes';

/** A registration or rotation's answer: the secret, shown this once. */
export interface ResourceServerCredentials {
  resourceServer: ResourceServer;
  clientId: string;
  clientSecret: string;
}

/** A resource server that authenticated: who it is and what audience it protects. */
export interface AuthenticatedResourceServer {
  id: string;
  audience: string;
}

/** Why a registry change was refused (the CLI's exit code 2). */
export class ResourceServerError extends Error {}

export type { DeclaredScope } from './scopes';

/** Secrets of 32 random bytes, base64url (43 characters), under a prefix a secret scanner can match. */
const SECRET_PREFIX = 'gh_rs_';
const SECRET_BYTES = 32;
/** A hash the lookup of an unknown client id is compared with, so that it takes as long as a known one. */
const NO_HASH = '0'.repeat(64);

/** The registry of resource servers (docs/resource-servers.md): the operator's CLI writes it, introspection reads it. */
@Injectable()
export class ResourceServersService {
  private readonly hasher: SecretHasher;

  constructor(
    private readonly repository: ResourceServersRepository,
    @InjectSecrets() secrets: Secrets,
  ) {
    this.hasher = new SecretHasher(secrets.apiKeyPepper);
  }

  async register(
    name: string,
    audience: string,
    scopes: readonly DeclaredScope[] = [],
    now = new Date(),
  ): Promise<ResourceServerCredentials> {
    checkScopes(scopes);
    const clientSecret = newSecret();
    const server = Object.assign(new ResourceServer(), {
      id: randomUUID(),
      name,
      audience,
      secretHash: this.hasher.hash(clientSecret),
      scopes: [...scopes],
      createdAt: now,
      secretRotatedAt: now,
    });
    if (!(await this.repository.insert(server))) {
      throw new ResourceServerError(`a resource server with the audience ${audience} is already registered`);
    }
    return { resourceServer: server, clientId: server.id, clientSecret };
  }

  list(): Promise<ResourceServer[]> {
    return this.repository.findAll();
  }

  async remove(audience: string): Promise<ResourceServer> {
    const server = await this.existing(audience);
    await this.repository.delete(audience);
    return server;
  }

  /** A new secret; the old one stops at the next request, on every instance (nothing caches it). */
  async rotateSecret(audience: string, now = new Date()): Promise<ResourceServerCredentials> {
    const server = await this.existing(audience);
    const clientSecret = newSecret();
    if (!(await this.repository.updateSecret(audience, this.hasher.hash(clientSecret), now))) {
      throw new ResourceServerError(`no resource server has the audience ${audience}`);
    }
    return { resourceServer: { ...server, secretRotatedAt: now }, clientId: server.id, clientSecret };
  }

  /** The resource server these client credentials name, or null (compared in constant time, unknown ids too). */
  async byCredentials(clientId: string, clientSecret: string): Promise<AuthenticatedResourceServer | null> {
    const found = UUID.test(clientId) ? await this.repository.findCredential(clientId) : undefined;
    const matches = this.hasher.matches(clientSecret, found?.secretHash ?? NO_HASH);
    return found !== undefined && matches ? { id: found.id, audience: found.audience } : null;
  }

  isRegistered(audience: string): Promise<boolean> {
    return this.repository.audienceExists(audience);
  }

  /**
   * The scopes the resource server of `audience` declares, in their order (the consent page shows them, a token's
   * `scope` is among them); an empty list when it declares none, null when no server has that audience.
   */
  declaredScopes(audience: string): Promise<DeclaredScope[] | null> {
    return this.repository.declaredScopes(audience);
  }

  /**
   * Replaces the declared scopes. Tokens already minted keep theirs until they expire; a scope removed here is refused
   * to new requests at once (docs/adr/0049-resource-server-scopes.md).
   */
  async setScopes(audience: string, scopes: readonly DeclaredScope[]): Promise<ResourceServer> {
    checkScopes(scopes);
    const server = await this.existing(audience);
    if (!(await this.repository.setScopes(audience, scopes))) {
      throw new ResourceServerError(`no resource server has the audience ${audience}`);
    }
    return { ...server, scopes: [...scopes] };
  }

  private async existing(audience: string): Promise<ResourceServer> {
    const server = await this.repository.findByAudience(audience);
    if (server === null) throw new ResourceServerError(`no resource server has the audience ${audience}`);
    return server;
  }
}

function checkScopes(scopes: readonly DeclaredScope[]): void {
  const problem = scopesProblem(scopes);
  if (problem !== null) throw new ResourceServerError(problem);
}

function newSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64url');
}
