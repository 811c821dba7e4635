import { randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditEntry, AuditService } from '../../audit/audit.service';
import type { RequestContext } from '../../audit/request-context';
import { AppError } from '../../common/errors';
import { SecretHasher } from '../../common/secret-hasher';
import { UUID } from '../../common/uuid';
import { InjectConfig, InjectSecrets } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import type { Secrets } from '../../config/local-secrets';
import { UnitOfWork } from '../../database/unit-of-work';
import { ClientCheck, GrantsService } from '../../grants/grants.service';
import { ClientRefused, OAuthClient } from './client-document';
import {
  checkRedirectUris,
  clientNameProblem,
  parseDynamicRegistration,
  RegistrationRefused,
} from './client-registration';
import { RegisteredClient, RegisteredClientKind } from './registered-client.entity';
import { RegisteredClientsRepository } from './registered-clients.repository';

/** Confidential clients' secrets: 32 random bytes, base64url, under a prefix a secret scanner can match. */
const SECRET_PREFIX = 'gh_cs_';
/** A hash an unknown or public client's presented secret is compared with, so that it takes as long as a known one. */
const NO_HASH = '0'.repeat(64);
const DAY_MS = 86_400_000;
const TOUCH_EVERY_MS = 3_600_000;
/** Later than any use. */
const NEVER = new Date('9999-12-31T00:00:00.000Z');

/** Who acts on an organization's clients: an admin (the API, the console), or the operator (the CLI: no actor). */
export interface ClientActor {
  organizationId: string;
  userId: string | null;
  credentialId?: string;
}

/** An organization's client to register: a name, its redirect URIs, and whether it gets a secret. */
export interface OrganizationClientInput {
  name: string;
  redirectUris: string[];
  confidential: boolean;
}

/** A registration's answer: the client, and a confidential one's secret, shown this once. */
export interface RegisteredClientCredentials {
  client: RegisteredClient;
  clientSecret: string | null;
}

/** How a token request named its client (RFC 6749 section 2.3.1): the id, and a secret by Basic or the form. */
export interface PresentedClient {
  clientId: string;
  secret: string | undefined;
  /** The secret came in an Authorization header (a refusal then challenges Basic). */
  viaHeader: boolean;
}

function refused(reason: RegistrationRefused['reason'], message: string): AppError {
  return new AppError(reason, { message });
}

/**
 * Clients registered with Gatehouse (docs/mcp.md#clients, docs/adr/0055-registered-oauth-clients.md): dynamic ones
 * (RFC 7591, public, usable by anyone while OAUTH_DYNAMIC_REGISTRATION is on, removed once idle) and an organization's
 * own, registered by its admins for internal apps (usable by its members only, optionally confidential). A removal
 * revokes the client's grants; creations and removals are audited.
 */
@Injectable()
export class RegisteredClients {
  private readonly hasher: SecretHasher;
  private readonly dynamicOn: boolean;
  private readonly idleMs: number;
  private readonly dynamicMax: number;
  /** When this instance last wrote each client's use (recordUse). */
  private readonly touched = new Map<string, number>();

  constructor(
    private readonly repository: RegisteredClientsRepository,
    private readonly grants: GrantsService,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    @InjectConfig() config: AppConfiguration,
    @InjectSecrets() secrets: Secrets,
  ) {
    this.hasher = new SecretHasher(secrets.apiKeyPepper);
    this.dynamicOn = config.oauthClients.dynamicRegistration;
    this.idleMs = config.oauthClients.dynamicClientIdleDays * DAY_MS;
    this.dynamicMax = config.oauthClients.dynamicClientsMax;
  }

  get dynamicRegistration(): boolean {
    return this.dynamicOn;
  }

  /**
   * The client for the authorization endpoint and the consent page, its use recorded; a ClientRefused when the id
   * names none, or a dynamic one while registration is off or once it has been idle too long.
   */
  async client(clientId: string, now = new Date()): Promise<OAuthClient> {
    const found = await this.usable(clientId, now);
    if (typeof found === 'string') throw new ClientRefused(found);
    return {
      clientId: found.id,
      name: found.name,
      host: null,
      logoUri: null,
      redirectUris: found.redirectUris,
      registration: found.kind,
      organizationId: found.organizationId,
    };
  }

  /**
   * The token endpoint's client authentication for a registered client (RFC 6749 section 2.3): a confidential one by
   * its secret, a public one without any. Its use is recorded.
   */
  async authenticate(presented: PresentedClient, now = new Date()): Promise<void> {
    const found = await this.usable(presented.clientId, now);
    if (typeof found === 'string') {
      this.hasher.matches(presented.secret ?? '', NO_HASH);
      throw new AppError('client_unknown', { message: found });
    }
    if (found.secretHash === null) {
      if (presented.viaHeader) throw new AppError('client_authentication_not_accepted');
      if (presented.secret !== undefined) throw new AppError('client_secret_not_accepted');
      return;
    }
    if (presented.secret === undefined) {
      throw new AppError('client_authentication_missing', {
        message: 'this client authenticates: HTTP Basic, or client_id and client_secret',
      });
    }
    if (!this.hasher.matches(presented.secret, found.secretHash)) throw new AppError('client_secret_invalid');
  }

  /**
   * The token endpoint's client authentication (docs/adr/0061-code-and-refresh-cost.md): done now for a client that
   * presents a secret, or whose id is no registered client's; for a registered client's id without a secret, left to
   * the redemption's statement (the client exists, has no secret, is usable), with the refusal to give if it was not.
   */
  async tokenClient(presented: PresentedClient, now = new Date()): Promise<ClientCheck | null> {
    if (presented.secret !== undefined || presented.viaHeader || !UUID.test(presented.clientId)) {
      await this.authenticate(presented, now);
      return null;
    }
    return {
      condition: {
        id: presented.clientId,
        // While dynamic registration is off, no dynamic client is usable: a bound no use is after.
        usedAfter: this.dynamicOn ? new Date(now.getTime() - this.idleMs) : NEVER,
      },
      refusal: () => this.authenticate(presented, now),
    };
  }

  /** A public client's token request (tokenClient): its use written at most once an hour per instance. */
  async recordUse(id: string, now = new Date()): Promise<void> {
    const last = this.touched.get(id);
    if (last !== undefined && last > now.getTime() - TOUCH_EVERY_MS) return;
    this.touched.set(id, now.getTime());
    await this.repository.touch(id, now);
  }

  /**
   * POST /oauth/register (RFC 7591): a public client, audited; only while dynamic registration is on, and while fewer
   * than OAUTH_DYNAMIC_CLIENTS_MAX are registered (429 `dynamic_clients_full` past it: idle ones are removed daily).
   */
  async register(metadata: unknown, request?: RequestContext, now = new Date()): Promise<RegisteredClient> {
    if (!this.dynamicOn) throw new AppError('registration_disabled');
    let parsed;
    try {
      parsed = parseDynamicRegistration(metadata);
    } catch (error) {
      if (error instanceof RegistrationRefused) throw refused(error.reason, error.message);
      throw error;
    }
    const client = this.newClient('dynamic', parsed.name, parsed.redirectUris, null, null, null, now);
    const stored = await this.unitOfWork.run(async (tx) => {
      if (!(await this.repository.insertDynamic(client, this.dynamicMax, tx))) return false;
      await this.audit.record(this.entry('oauth_client.created', client, null, 'dynamic', request), tx);
      return true;
    });
    if (!stored) throw new AppError('dynamic_clients_full');
    return client;
  }

  /** An organization's client for an internal app (its admins, or the operator's CLI); a secret when confidential. */
  async createForOrganization(
    actor: ClientActor,
    input: OrganizationClientInput,
    request?: RequestContext,
    now = new Date(),
  ): Promise<RegisteredClientCredentials> {
    const problem = clientNameProblem(input.name);
    if (problem !== null) throw refused('client_metadata_invalid', problem.replace('client_name', 'name'));
    let redirectUris: string[];
    try {
      // A confidential client is a web app: a private-use scheme is a native (public) app's (RFC 8252 section 7.1).
      redirectUris = checkRedirectUris(input.redirectUris, { privateUseSchemes: !input.confidential });
    } catch (error) {
      if (error instanceof RegistrationRefused) throw refused(error.reason, error.message);
      throw error;
    }
    const clientSecret = input.confidential ? SECRET_PREFIX + randomBytes(32).toString('base64url') : null;
    const client = this.newClient(
      'organization',
      input.name.trim(),
      redirectUris,
      actor.organizationId,
      clientSecret === null ? null : this.hasher.hash(clientSecret),
      actor.userId,
      now,
    );
    await this.unitOfWork.run(async (tx) => {
      await this.repository.insert(client, tx);
      await this.audit.record(this.entry('oauth_client.created', client, actor, 'organization', request), tx);
    });
    return { client, clientSecret };
  }

  listForOrganization(organizationId: string): Promise<RegisteredClient[]> {
    return this.repository.listForOrganization(organizationId);
  }

  /** Every registered client, or those of one kind (the operator's CLI). */
  list(kind?: RegisteredClientKind): Promise<RegisteredClient[]> {
    return this.repository.list(kind);
  }

  /**
   * Removes one of the organization's clients (another organization's, or a dynamic one, is 404): its grants are
   * revoked with it, audited with reason `admin`.
   */
  async removeForOrganization(actor: ClientActor, id: string, request?: RequestContext): Promise<RegisteredClient> {
    const client = UUID.test(id) ? await this.repository.findById(id) : null;
    if (client === null || client.organizationId !== actor.organizationId) throw new AppError('oauth_client_not_found');
    await this.removeClient(client, actor, 'admin', request);
    return client;
  }

  /** The operator's removal (the CLI): any client, dynamic or an organization's; reason `operator`. */
  async remove(id: string): Promise<RegisteredClient> {
    const client = UUID.test(id) ? await this.repository.findById(id) : null;
    if (client === null)
      throw new AppError('oauth_client_not_found', { message: `no registered client has the id ${id}` });
    await this.removeClient(client, null, 'operator');
    return client;
  }

  /**
   * Removes up to `limit` of the dynamic clients idle past OAUTH_DYNAMIC_CLIENT_IDLE_DAYS, their grants revoked (reason
   * `idle`); how many. Fewer than `limit`: none is left, or another instance removed some meanwhile (IdleClientSweep).
   */
  async removeIdle(now: Date, limit: number): Promise<number> {
    let removed = 0;
    for (const id of await this.repository.idleDynamic(new Date(now.getTime() - this.idleMs), limit)) {
      const client = await this.repository.findById(id);
      if (client !== null && (await this.removeClient(client, null, 'idle'))) removed += 1;
    }
    return removed;
  }

  private async removeClient(
    client: RegisteredClient,
    actor: ClientActor | null,
    reason: 'admin' | 'operator' | 'idle',
    request?: RequestContext,
  ): Promise<boolean> {
    const now = new Date();
    return this.unitOfWork.run(async (tx) => {
      if (!(await this.repository.delete(client.id, tx))) return false;
      const revoked = await this.grants.revokeClientGrants(client.id, now, tx);
      await this.audit.recordAll([...revoked, this.entry('oauth_client.removed', client, actor, reason, request)], tx);
      return true;
    });
  }

  /** The client, or why it cannot be used now; a use within the hour is not written again. */
  private async usable(clientId: string, now: Date): Promise<RegisteredClient | string> {
    const client = UUID.test(clientId) ? await this.repository.findById(clientId) : null;
    if (client === null) {
      return 'client_id is neither an https URL of a client metadata document nor a registered client';
    }
    if (client.kind === 'dynamic') {
      if (!this.dynamicOn) return 'the client was registered dynamically, and dynamic registration is off';
      if ((client.lastUsedAt ?? client.createdAt).getTime() + this.idleMs <= now.getTime()) {
        return 'the client was registered dynamically and has not been used for too long: register again';
      }
    }
    // last_used_at only says which clients are idle: written at most once an hour, whatever the traffic.
    if (client.lastUsedAt === null || client.lastUsedAt.getTime() <= now.getTime() - TOUCH_EVERY_MS) {
      await this.repository.touch(client.id, now);
      this.touched.set(client.id, now.getTime());
    } else {
      this.touched.set(client.id, client.lastUsedAt.getTime());
    }
    return client;
  }

  private newClient(
    kind: RegisteredClientKind,
    name: string,
    redirectUris: string[],
    organizationId: string | null,
    secretHash: string | null,
    createdBy: string | null,
    now: Date,
  ): RegisteredClient {
    return Object.assign(new RegisteredClient(), {
      id: randomUUID(),
      kind,
      organizationId,
      name,
      redirectUris,
      secretHash,
      createdBy,
      createdAt: now,
      lastUsedAt: null,
    });
  }

  private entry(
    action: 'oauth_client.created' | 'oauth_client.removed',
    client: RegisteredClient,
    actor: ClientActor | null,
    reason: string,
    request?: RequestContext,
  ): AuditEntry {
    return {
      action,
      organizationId: client.organizationId,
      actorUserId: actor?.userId ?? null,
      actorApiKeyId: actor?.credentialId ?? null,
      targetType: 'oauth_client',
      targetId: client.id,
      reason,
      request,
    };
  }
}
