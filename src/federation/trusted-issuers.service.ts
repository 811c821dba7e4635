import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AppError, ErrorReason, tooManyRequests } from '../common/errors';
import { FAILURE_COUNTER, FailureCounter } from '../common/failure-counter';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Transaction, UnitOfWork } from '../database/unit-of-work';
import { IdentityService } from '../identity/identity.service';
import type { Role } from '../identity/roles';
import type { CredentialCipher } from '../integrations/credential-cipher';
import { FEDERATION_TIMINGS, FederationTimings } from './federation-timings';
import { emailDomainOf } from './email-domains';
import { discoverIssuer, DiscoveryError, IssuerMetadata, metadataProblem } from './issuer-discovery';
import { ISSUER_CREDENTIALS, IssuerCredentials } from './issuer-credentials';
import { issuerShapeProblem, parseOrigin } from './issuer-url';
import { peopleRedirectUri } from './people-redirect-uri';
import { IssuerKind, TokenEndpointAuthMethod, TrustedIssuer } from './trusted-issuer.entity';
import { TrustedIssuersRepository } from './trusted-issuers.repository';

/** The cipher of client secrets: the integrations' keys and format, for this table (docs/adr/0036-federation.md). */
export const TRUSTED_ISSUER_CIPHER = Symbol('TRUSTED_ISSUER_CIPHER');
/** The field a sealed client secret is bound to, with the table and the entry's id (the cipher's associated data). */
const CLIENT_SECRET_FIELD = 'client_secret';
/** Visible characters only: a secret with a space or a line break in it is a copying mistake. */
const CLIENT_SECRET = /^[^\s\p{Cc}]{1,1024}$/u;
/** The client id is the ID tokens' audience: as the audience column, visible characters only. */
const CLIENT_ID = /^[^\s\p{Cc}]{1,255}$/u;

/** What `trusted-issuer add` asks for, already parsed (src/cli/program.ts). */
export interface NewTrustedIssuer {
  organization: string;
  issuer: string;
  kind: IssuerKind;
  audience?: string;
  clientId?: string;
  clientSecret?: string;
  tokenEndpointAuth?: TokenEndpointAuthMethod;
  emailDomains: string[];
  jitRole?: Role;
  /** `--allow-origin`: origins besides the issuer's own for its key set and endpoints (none: the issuer's only). */
  allowedOrigins?: string[];
}

/** A people issuer's settings as the console sets them (PUT /v1/organization/single-sign-on). */
export interface PeopleSettings {
  issuer: string;
  clientId: string;
  /** Absent when changing an entry: the stored one is kept. */
  clientSecret?: string;
  tokenEndpointAuth?: TokenEndpointAuthMethod;
  emailDomains: string[];
  jitRole?: Role;
  /**
   * The origins besides the issuer's own for its key set and endpoints, as `--allow-origin` gives them to add (Google's
   * keys are on www.googleapis.com). Absent: the stored ones while the issuer stays the same, else none.
   */
  allowedOrigins?: string[];
}

/** Who changed the trusted issuers: nobody for the admin CLI (the operator); the admin for an API request. */
export interface IssuerChangeBy {
  actorUserId?: string | null;
  actorApiKeyId?: string | null;
  request?: RequestContext;
}

/** An entry as stored, with what its discovery document said and, for people, the redirect URI to register. */
export interface DiscoveredIssuer {
  entry: TrustedIssuer;
  metadata: IssuerMetadata;
  /** peopleRedirectUri for the document as it is now; null for workloads. */
  redirectUri: string | null;
}

/**
 * Discoveries an organization's admins may start from the API per minute (testing the connection, saving the people
 * issuer): each is a request from Gatehouse to an address they chose.
 */
export const DISCOVERIES_PER_MINUTE = 10;

/** The audience column's length (and `--audience`'s). */
const MAX_AUDIENCE_LENGTH = 255;

/**
 * The default audience of an organization's `workloads` entry: Gatehouse's issuer URL and the organization's id, so
 * that a token asked for one organization is accepted by no other's entry (docs/adr/0043-workload-identities-named-by-client-id.md).
 */
export function organizationAudience(jwtIssuer: string, organizationId: string): string {
  return `${jwtIssuer.replace(/\/+$/, '')}/organizations/${organizationId}`;
}

/**
 * Why a change of the trusted issuers was refused: a domain error whose details hold the variable parts of its message
 * (`options`: the NewTrustedIssuer fields at fault), so that the CLI words it with its flags from the reason and the
 * details, never from the message's text (src/cli/error-wording.ts).
 */
export class TrustedIssuerError extends AppError {
  constructor(reason: ErrorReason, message: string, details: TrustedIssuerErrorDetails = {}) {
    super(reason, { message, details: { ...details } });
  }
}

export interface TrustedIssuerErrorDetails {
  /** The fields of NewTrustedIssuer at fault, in the order the message names them. */
  options?: (keyof NewTrustedIssuer)[];
  /** The fields the first of `options` (or the issuer's kind) needs besides. */
  needs?: (keyof NewTrustedIssuer)[];
  /** What is wrong with the value of the first of `options`, or of the issuer. */
  problem?: string;
  /** The value at fault (an allowed origin, a default audience). */
  value?: string;
  /** The id of the entry in the way. */
  id?: string;
  /** The origin of an issuer's endpoint that is neither its own nor an allowed one. */
  foreignOrigin?: string;
}

/** A removed entry, and how many workload identities that named it its removal revoked. */
export interface TrustedIssuerRemoval {
  entry: TrustedIssuer;
  revokedWorkloadIdentities: number;
}

/**
 * The identity providers each organization trusts (docs/federation.md#trusted-issuers): added after their discovery
 * document has been fetched and checked, listed, removed with the workload identities that name them; each change
 * audited in its transaction.
 */
@Injectable()
export class TrustedIssuersService {
  constructor(
    private readonly repository: TrustedIssuersRepository,
    private readonly identity: IdentityService,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    @Inject(TRUSTED_ISSUER_CIPHER) private readonly cipher: CredentialCipher,
    @InjectConfig() private readonly config: AppConfiguration,
    @Inject(FEDERATION_TIMINGS) private readonly timings: FederationTimings,
    // The credentials that name an entry, revoked with it: a port workload-identities provides.
    @Inject(ISSUER_CREDENTIALS) private readonly credentials: IssuerCredentials,
    @Inject(FAILURE_COUNTER) private readonly discoveries: FailureCounter,
  ) {}

  async add(input: NewTrustedIssuer, now = new Date(), by: IssuerChangeBy = {}): Promise<TrustedIssuer> {
    return (await this.addDiscovered(input, now, by)).entry;
  }

  /** As add, with what the discovery document said: for a people issuer, the redirect URI to register there. */
  async addDiscovered(input: NewTrustedIssuer, now = new Date(), by: IssuerChangeBy = {}): Promise<DiscoveredIssuer> {
    const shapeProblem = issuerShapeProblem(input.issuer);
    if (shapeProblem !== null) {
      throw new TrustedIssuerError('issuer_invalid', `the issuer ${shapeProblem}`, { problem: shapeProblem });
    }
    const allowedOrigins = this.allowedOrigins(input.allowedOrigins ?? []);
    const organization = await this.identity.organizationByName(input.organization);
    const entry = Object.assign(new TrustedIssuer(), {
      id: randomUUID(),
      organizationId: organization.id,
      issuer: input.issuer,
      kind: input.kind,
      ...this.kindSettings(input, organization.id),
      allowedOrigins,
      createdAt: now,
    });
    const conflict = await this.conflictOf(input.organization, entry);
    if (conflict !== null) throw new TrustedIssuerError(conflict.reason, conflict.message, conflict.details);
    const metadata = await this.checkDiscovery(entry);
    if (input.clientSecret !== undefined) {
      entry.clientSecretEncrypted = this.cipher.encrypt(input.clientSecret, entry.id, CLIENT_SECRET_FIELD);
    }
    try {
      await this.unitOfWork.run(async (tx) => {
        await this.repository.insert(entry, tx);
        await this.audit.record(
          {
            action: 'trusted_issuer.added',
            organizationId: organization.id,
            targetType: 'trusted_issuer',
            targetId: entry.id,
            reason: entry.kind,
            ...actor(by),
          },
          tx,
        );
      });
    } catch (error) {
      // Another add won between the checks above and this insert (a unique index said no): which one, said as above.
      if (isUniqueViolation(error)) {
        const conflict = await this.conflictOf(input.organization, entry);
        throw conflict === null
          ? new TrustedIssuerError('trusted_issuer_exists', `${entry.issuer} was added for ${entry.kind} meanwhile`)
          : new TrustedIssuerError(conflict.reason, conflict.message, conflict.details);
      }
      throw error;
    }
    return { entry, metadata, redirectUri: this.redirectUriOf(organization.name, entry, metadata) };
  }

  /**
   * The organization's single sign-on as its admins set it in the console (docs/api.md#single-sign-on-set-up): its
   * people issuer added, or changed in place (the stored client secret kept when none is given; the allowed origins
   * kept while the issuer is the same), under the rules of add: the discovery document must pass, a people issuer
   * serves one organization. Audited `trusted_issuer.added` (reason `people`) or `trusted_issuer.updated` (reason
   * `people`), with the admin as actor. At most DISCOVERIES_PER_MINUTE per organization with testPeople.
   */
  async savePeople(organizationId: string, input: PeopleSettings, by: IssuerChangeBy = {}): Promise<DiscoveredIssuer> {
    const organization = await this.identity.organizationById(organizationId);
    const current = await this.repository.peopleIssuerOf(organizationId);
    await this.takeDiscovery(organizationId);
    if (current === null) {
      return this.addDiscovered(
        {
          organization: organization.name,
          kind: 'people',
          issuer: input.issuer,
          clientId: input.clientId,
          clientSecret: input.clientSecret,
          tokenEndpointAuth: input.tokenEndpointAuth,
          emailDomains: input.emailDomains,
          jitRole: input.jitRole,
          allowedOrigins: input.allowedOrigins,
        },
        new Date(),
        by,
      );
    }
    const shapeProblem = issuerShapeProblem(input.issuer);
    if (shapeProblem !== null) {
      throw new TrustedIssuerError('issuer_invalid', `the issuer ${shapeProblem}`, { problem: shapeProblem });
    }
    const updated = Object.assign(new TrustedIssuer(), current, {
      issuer: input.issuer,
      ...this.kindSettings(
        { ...input, organization: organization.name, kind: 'people' },
        organizationId,
        current.clientSecretEncrypted !== null,
      ),
      clientSecretEncrypted: current.clientSecretEncrypted,
      allowedOrigins:
        input.allowedOrigins !== undefined
          ? this.allowedOrigins(input.allowedOrigins)
          : input.issuer === current.issuer
            ? current.allowedOrigins
            : [],
    });
    const originsChanged = updated.allowedOrigins.join(' ') !== current.allowedOrigins.join(' ');
    const taken = () =>
      new TrustedIssuerError(
        'people_issuer_taken',
        `${updated.issuer} already signs in the people of another organization (a people issuer serves one organization)`,
      );
    if ((await this.repository.peopleOrganizationOf(updated.issuer, organizationId)) !== null) throw taken();
    const metadata = await this.checkDiscovery(updated);
    if (input.clientSecret !== undefined) {
      updated.clientSecretEncrypted = this.cipher.encrypt(input.clientSecret, updated.id, CLIENT_SECRET_FIELD);
    }
    try {
      const found = await this.unitOfWork.run(async (tx) => {
        if (!(await this.repository.updatePeople(updated, tx))) return false;
        // Origins given and changed: also the entry set-origins records, so that who allowed an origin is one filter.
        const reasons =
          originsChanged && input.allowedOrigins !== undefined ? ['people', 'allowed_origins'] : ['people'];
        await this.audit.recordAll(
          reasons.map((reason) => ({
            action: 'trusted_issuer.updated' as const,
            organizationId,
            targetType: 'trusted_issuer' as const,
            targetId: updated.id,
            reason,
            ...actor(by),
          })),
          tx,
        );
        return true;
      });
      if (!found) throw new AppError('sso_not_configured');
    } catch (error) {
      if (isUniqueViolation(error)) throw taken();
      throw error;
    }
    return { entry: updated, metadata, redirectUri: this.redirectUriOf(organization.name, updated, metadata) };
  }

  /**
   * "Test the connection" of the console's single sign-on set-up: the issuer's discovery document fetched and checked
   * as add and savePeople would (the address rules, the issuer equal, the endpoints single sign-on needs, the client
   * authentication asked for), nothing stored; what it found and the redirect URI to register there. The allowed
   * origins are those given (held to add's rules), else the organization's people issuer's when it is the same issuer.
   * At most DISCOVERIES_PER_MINUTE per organization with savePeople.
   */
  async testPeople(
    organizationId: string,
    input: { issuer: string; tokenEndpointAuth?: TokenEndpointAuthMethod; allowedOrigins?: string[] },
  ): Promise<DiscoveredIssuer> {
    const shapeProblem = issuerShapeProblem(input.issuer);
    if (shapeProblem !== null) {
      throw new TrustedIssuerError('issuer_invalid', `the issuer ${shapeProblem}`, { problem: shapeProblem });
    }
    const given = input.allowedOrigins === undefined ? undefined : this.allowedOrigins(input.allowedOrigins);
    const organization = await this.identity.organizationById(organizationId);
    const current = await this.repository.peopleIssuerOf(organizationId);
    await this.takeDiscovery(organizationId);
    const entry = Object.assign(new TrustedIssuer(), {
      id: current?.id ?? randomUUID(),
      organizationId,
      issuer: input.issuer,
      kind: 'people',
      tokenEndpointAuth: input.tokenEndpointAuth ?? 'client_secret_basic',
      allowedOrigins: given ?? (current !== null && current.issuer === input.issuer ? current.allowedOrigins : []),
    });
    const metadata = await this.checkDiscovery(entry);
    return { entry, metadata, redirectUri: this.redirectUriOf(organization.name, entry, metadata) };
  }

  /** The organization's people issuer, or null (by id: the API's caller's organization). */
  peopleIssuerOfOrganization(organizationId: string): Promise<TrustedIssuer | null> {
    return this.repository.peopleIssuerOf(organizationId);
  }

  /** Ends the organization's single sign-on (its people issuer removed, as remove does); `sso_not_configured` without one. */
  async removePeople(organizationId: string, by: IssuerChangeBy = {}): Promise<TrustedIssuer> {
    const current = await this.repository.peopleIssuerOf(organizationId);
    if (current === null) throw new AppError('sso_not_configured');
    try {
      return (await this.remove(current.id, new Date(), by)).entry;
    } catch (error) {
      // Removed meanwhile.
      if (error instanceof AppError && error.reason === 'trusted_issuer_not_found') {
        throw new AppError('sso_not_configured');
      }
      throw error;
    }
  }

  /**
   * Replaces the entry's allowed origins (`trusted-issuer set-origins`) once its discovery document passes with them:
   * how an entry whose key set or endpoints live on another origin (Google) is kept working without being removed,
   * which would revoke its workload identities. Audited `trusted_issuer.updated` (reason `allowed_origins`).
   */
  async setAllowedOrigins(id: string, values: string[], by: IssuerChangeBy = {}): Promise<TrustedIssuer> {
    const entry = await this.repository.findById(id);
    if (entry === null) throw new TrustedIssuerError('trusted_issuer_not_found', `no trusted issuer has the id ${id}`);
    return this.changeAllowedOrigins(entry, values, by);
  }

  /**
   * The allowed origins of the organization's people issuer, as its admins set them in the console
   * (PUT /v1/organization/single-sign-on/allowed-origins): setAllowedOrigins' rules and audit entry, the admin as
   * actor; `sso_not_configured` without one. At most DISCOVERIES_PER_MINUTE per organization with testPeople.
   */
  async setPeopleAllowedOrigins(
    organizationId: string,
    values: string[],
    by: IssuerChangeBy = {},
  ): Promise<TrustedIssuer> {
    const current = await this.repository.peopleIssuerOf(organizationId);
    if (current === null) throw new AppError('sso_not_configured');
    await this.takeDiscovery(organizationId);
    try {
      return await this.changeAllowedOrigins(current, values, by);
    } catch (error) {
      // Removed meanwhile.
      if (error instanceof TrustedIssuerError && error.reason === 'trusted_issuer_not_found') {
        throw new AppError('sso_not_configured');
      }
      throw error;
    }
  }

  private async changeAllowedOrigins(
    entry: TrustedIssuer,
    values: string[],
    by: IssuerChangeBy,
  ): Promise<TrustedIssuer> {
    const id = entry.id;
    const updated = Object.assign(new TrustedIssuer(), entry, { allowedOrigins: this.allowedOrigins(values) });
    await this.checkDiscovery(updated);
    const found = await this.unitOfWork.run(async (tx) => {
      if (!(await this.repository.setAllowedOrigins(id, updated.allowedOrigins, tx))) return false;
      await this.audit.record(
        {
          action: 'trusted_issuer.updated',
          organizationId: entry.organizationId,
          targetType: 'trusted_issuer',
          targetId: entry.id,
          reason: 'allowed_origins',
          ...actor(by),
        },
        tx,
      );
      return true;
    });
    if (!found) throw new TrustedIssuerError('trusted_issuer_not_found', `no trusted issuer has the id ${id}`);
    return updated;
  }

  async list(organization: string): Promise<TrustedIssuer[]> {
    return this.repository.findByOrganization((await this.identity.organizationByName(organization)).id);
  }

  /** The organization's people issuer (one at most), or null; an unknown organization is NOT_FOUND, as in list. */
  async peopleIssuerOf(organization: string): Promise<TrustedIssuer | null> {
    return this.repository.peopleIssuerOf((await this.identity.organizationByName(organization)).id);
  }

  /**
   * Removes the entry, and revokes in the same transaction every ACTIVE workload identity that names it, each audited
   * as a revocation (reason `trusted_issuer_removed`: its credential-change on the revocation feed).
   */
  async remove(id: string, at = new Date(), by: IssuerChangeBy = {}): Promise<TrustedIssuerRemoval> {
    const removal = await this.unitOfWork.run(async (tx) => {
      const entry = await this.repository.delete(id, tx);
      if (entry === null) return null;
      const revoked = await this.credentials.revokeAllTrusting(entry, at, tx);
      await this.audit.recordAll(
        [
          ...revoked,
          {
            action: 'trusted_issuer.removed',
            organizationId: entry.organizationId,
            targetType: 'trusted_issuer',
            targetId: entry.id,
            reason: entry.kind,
            ...actor(by),
          },
        ],
        tx,
      );
      return { entry, revokedWorkloadIdentities: revoked.length };
    });
    if (removal === null)
      throw new TrustedIssuerError('trusted_issuer_not_found', `no trusted issuer has the id ${id}`);
    return removal;
  }

  /**
   * Whether the organization's entry still exists, read inside `tx` and held there: a workload identity's creation
   * stores it only if so, and the entry's removal waits for that transaction, so it revokes the identity too.
   */
  async holdEntry(organizationId: string, id: string, tx: Transaction): Promise<boolean> {
    return this.repository.hold(organizationId, id, tx);
  }

  /**
   * Why the organization may not trust the entry: it trusts it already, it has a people issuer (one at most:
   * trusted_issuers_people_per_organization), or another organization has this people issuer; null when it may.
   */
  private async conflictOf(
    organization: string,
    entry: TrustedIssuer,
  ): Promise<{ reason: ErrorReason; message: string; details?: TrustedIssuerErrorDetails } | null> {
    if (await this.repository.exists(entry.organizationId, entry.issuer, entry.kind)) {
      return {
        reason: 'trusted_issuer_exists',
        message: `${organization} already trusts ${entry.issuer} for ${entry.kind}`,
      };
    }
    if (entry.kind !== 'people') return null;
    const current = await this.repository.peopleIssuerOf(entry.organizationId);
    if (current !== null) {
      return {
        reason: 'people_issuer_exists',
        message:
          `${organization} already has a people issuer, ${current.issuer} (id ${current.id}); an organization has ` +
          'one at most: remove it first',
        details: { id: current.id },
      };
    }
    if ((await this.repository.peopleOrganizationOf(entry.issuer, entry.organizationId)) !== null) {
      return {
        reason: 'people_issuer_taken',
        message: `${entry.issuer} already signs in the people of another organization (a people issuer serves one organization)`,
      };
    }
    return null;
  }

  /** The entry's discovery document, fetched and checked as it would be used (its URLs, origins and, for people, endpoints). */
  private async checkDiscovery(entry: TrustedIssuer): Promise<IssuerMetadata> {
    try {
      const options = {
        production: this.config.production,
        timeoutMs: this.timings.httpTimeoutMs,
        allowedOrigins: entry.allowedOrigins,
        privateNetworks: this.config.identityProviderNetworks,
      };
      const metadata = await discoverIssuer(entry.issuer, options);
      const problem = metadataProblem(metadata, entry.kind, entry.tokenEndpointAuth, options);
      if (problem !== null) {
        throw new TrustedIssuerError('issuer_discovery_failed', problem.text, { foreignOrigin: problem.foreignOrigin });
      }
      return metadata;
    } catch (error) {
      if (error instanceof DiscoveryError) {
        throw new TrustedIssuerError('issuer_discovery_failed', error.message, { foreignOrigin: error.foreignOrigin });
      }
      throw error;
    }
  }

  /**
   * The allowed origins as origins (`https://host[:port]`, once each, in the order given), each held to the rules of the
   * issuer's own URL; the issuer's origin itself needs none.
   */
  private allowedOrigins(values: string[]): string[] {
    const origins: string[] = [];
    for (const value of values) {
      const parsed = parseOrigin(value, this.config.production, this.config.identityProviderNetworks);
      if ('problem' in parsed) {
        throw new TrustedIssuerError('allowed_origin_invalid', `${value} ${parsed.problem}`, {
          value,
          problem: parsed.problem,
        });
      }
      if (!origins.includes(parsed.origin)) origins.push(parsed.origin);
    }
    return origins;
  }

  /** The redirect URI to register at a people issuer whose document is `metadata`; null for workloads. */
  private redirectUriOf(organizationName: string, entry: TrustedIssuer, metadata: IssuerMetadata): string | null {
    return entry.kind === 'people'
      ? peopleRedirectUri(this.config.console.publicBaseUrl, organizationName, metadata.issParameterSupported)
      : null;
  }

  /** One of the organization's DISCOVERIES_PER_MINUTE from the API; past them 429 `too_many_issuer_tests`. */
  private async takeDiscovery(organizationId: string): Promise<void> {
    const slot = await this.discoveries.reserve(
      `issuer-discovery:org:${organizationId}`,
      DISCOVERIES_PER_MINUTE,
      60_000,
    );
    if (!slot.granted) throw tooManyRequests('too_many_issuer_tests', slot.resetsInMs);
  }

  /** The client secret for the issuer's token endpoint (console single sign-on); null when it has none. */
  clientSecretOf(entry: TrustedIssuer): string | null {
    return entry.clientSecretEncrypted === null
      ? null
      : this.cipher.decrypt(entry.clientSecretEncrypted, entry.id, CLIENT_SECRET_FIELD);
  }

  /**
   * The options each kind takes. People: Gatehouse is a client of the issuer (its id is the ID tokens' audience).
   * Workloads: tokens name Gatehouse and the organization as their audience, by default
   * `<JWT_ISSUER>/organizations/<organization id>` (organizationAudience); no client, no sign-in settings.
   */
  private kindSettings(
    input: NewTrustedIssuer,
    organizationId: string,
    /** A people entry changed in place whose stored client secret stays unless one is given. */
    keepsSecret = false,
  ): Pick<
    TrustedIssuer,
    'audience' | 'clientId' | 'clientSecretEncrypted' | 'tokenEndpointAuth' | 'emailDomains' | 'jitRole'
  > {
    if (input.tokenEndpointAuth !== undefined && input.clientSecret === undefined && !keepsSecret) {
      throw new TrustedIssuerError('issuer_client_invalid', 'a token endpoint auth method needs a client secret', {
        options: ['tokenEndpointAuth'],
        needs: ['clientSecret'],
      });
    }
    if (input.clientSecret !== undefined && !CLIENT_SECRET.test(input.clientSecret)) {
      throw new TrustedIssuerError(
        'issuer_client_invalid',
        'the client secret must be 1 to 1024 characters, without spaces',
        { options: ['clientSecret'], problem: 'must be 1 to 1024 characters, without spaces' },
      );
    }
    if (input.clientId !== undefined && !CLIENT_ID.test(input.clientId)) {
      throw new TrustedIssuerError(
        'issuer_client_invalid',
        'the client id must be 1 to 255 characters, without spaces',
        {
          options: ['clientId'],
          problem: 'must be 1 to 255 characters, without spaces',
        },
      );
    }
    if (input.clientSecret !== undefined && input.clientId === undefined) {
      throw new TrustedIssuerError('issuer_client_invalid', 'a client secret needs a client id', {
        options: ['clientSecret'],
        needs: ['clientId'],
      });
    }
    if (input.kind === 'workloads') {
      const peopleOnly = (
        [
          ['clientId', 'client id', input.clientId],
          ['clientSecret', 'client secret', input.clientSecret],
          ['emailDomains', 'e-mail domains', input.emailDomains.length > 0 ? input.emailDomains : undefined],
          ['jitRole', 'just-in-time role', input.jitRole],
        ] as const
      ).filter(([, , value]) => value !== undefined);
      if (peopleOnly.length > 0) {
        throw new TrustedIssuerError(
          'issuer_option_not_for_kind',
          `${peopleOnly.map(([, words]) => words).join(', ')}: only for a people issuer`,
          { options: peopleOnly.map(([option]) => option) },
        );
      }
      const audience = input.audience ?? organizationAudience(this.config.jwt.issuer, organizationId);
      if (audience.length > MAX_AUDIENCE_LENGTH) {
        throw new TrustedIssuerError(
          'issuer_audience_invalid',
          `the default audience ${audience} is longer than ${MAX_AUDIENCE_LENGTH} characters: give one`,
          { options: ['audience'], value: audience, problem: `is longer than ${MAX_AUDIENCE_LENGTH} characters` },
        );
      }
      return {
        audience,
        clientId: null,
        clientSecretEncrypted: null,
        tokenEndpointAuth: null,
        emailDomains: [],
        jitRole: null,
      };
    }
    if (input.clientId === undefined || (input.clientSecret === undefined && !keepsSecret)) {
      throw new TrustedIssuerError(
        'issuer_client_invalid',
        "a people issuer needs a client id and a client secret (Gatehouse's client at the issuer)",
        { options: ['kind'], needs: ['clientId', 'clientSecret'] },
      );
    }
    const emailDomains: string[] = [];
    for (const value of input.emailDomains) {
      const domain = emailDomainOf(value);
      if (domain === null) {
        throw new TrustedIssuerError('email_domain_invalid', `${value} is not a domain name, e.g. example.com`, {
          options: ['emailDomains'],
          value,
        });
      }
      if (!emailDomains.includes(domain)) emailDomains.push(domain);
    }
    if (input.jitRole !== undefined && emailDomains.length === 0) {
      throw new TrustedIssuerError(
        'jit_role_needs_email_domain',
        'a just-in-time role needs e-mail domains: just-in-time membership adds only people of the domains the organization ' +
          "owns (without them, the issuer's tokens could make anyone a member, another organization's admin included)",
        { options: ['jitRole'], needs: ['emailDomains'] },
      );
    }
    if (input.audience !== undefined && input.audience !== input.clientId) {
      throw new TrustedIssuerError(
        'issuer_audience_invalid',
        'the audience of a people issuer is its client id (the audience of its ID tokens)',
        { options: ['audience', 'kind'], needs: ['clientId'] },
      );
    }
    return {
      audience: input.clientId,
      clientId: input.clientId,
      clientSecretEncrypted: null,
      tokenEndpointAuth: input.tokenEndpointAuth ?? 'client_secret_basic',
      emailDomains,
      jitRole: input.jitRole ?? null,
    };
  }
}

/** The audit entry's actor fields for a change made by `by`. */
function actor(by: IssuerChangeBy): {
  actorUserId: string | null;
  actorApiKeyId: string | null;
  request?: RequestContext;
} {
  return { actorUserId: by.actorUserId ?? null, actorApiKeyId: by.actorApiKeyId ?? null, request: by.request };
}

/** PostgreSQL's unique_violation, SQLite's SQLITE_CONSTRAINT_UNIQUE (also as TypeORM wraps them). */
function isUniqueViolation(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 4; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return true;
    const next = current as { driverError?: unknown; cause?: unknown };
    current = next.driverError ?? next.cause;
  }
  return false;
}
