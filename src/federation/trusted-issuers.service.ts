import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { UnitOfWork } from '../database/unit-of-work';
import { IdentityService } from '../identity/identity.service';
import type { Role } from '../identity/roles';
import type { CredentialCipher } from '../integrations/credential-cipher';
import { FEDERATION_TIMINGS, FederationTimings } from './federation-timings';
import { discoverIssuer, DiscoveryError, metadataProblem } from './issuer-discovery';
import { issuerShapeProblem } from './issuer-url';
import { IssuerKind, TokenEndpointAuthMethod, TrustedIssuer } from './trusted-issuer.entity';
import { TrustedIssuersRepository } from './trusted-issuers.repository';

/** The cipher of client secrets: the integrations' keys and format, for this table (docs/adr/0036-federation.md). */
export const TRUSTED_ISSUER_CIPHER = Symbol('TRUSTED_ISSUER_CIPHER');
/** The field a sealed client secret is bound to, with the table and the entry's id (the cipher's associated data). */
const CLIENT_SECRET_FIELD = 'client_secret';
/** Visible characters only: a secret with a space or a line break in it is a copying mistake. */
const CLIENT_SECRET = /^[^\s\p{Cc}]{1,1024}$/u;

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
}

/** Why a change of the trusted issuers was refused (the CLI's exit code 2). */
export class TrustedIssuerError extends Error {}

/**
 * The identity providers each organization trusts (docs/federation.md#trusted-issuers): added after their discovery
 * document has been fetched and checked, listed, removed; each change audited in its transaction.
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
  ) {}

  async add(input: NewTrustedIssuer, now = new Date()): Promise<TrustedIssuer> {
    const shapeProblem = issuerShapeProblem(input.issuer);
    if (shapeProblem !== null) throw new TrustedIssuerError(`--issuer ${shapeProblem}`);
    const organization = await this.identity.organizationByName(input.organization);
    const entry = Object.assign(new TrustedIssuer(), {
      id: randomUUID(),
      organizationId: organization.id,
      issuer: input.issuer,
      kind: input.kind,
      ...this.kindSettings(input),
      createdAt: now,
    });
    if (await this.repository.exists(organization.id, entry.issuer, entry.kind)) {
      throw new TrustedIssuerError(`${input.organization} already trusts ${entry.issuer} for ${entry.kind}`);
    }
    if (
      entry.kind === 'people' &&
      (await this.repository.peopleOrganizationOf(entry.issuer, organization.id)) !== null
    ) {
      throw new TrustedIssuerError(
        `${entry.issuer} already signs in the people of another organization (a people issuer serves one organization)`,
      );
    }
    try {
      const metadata = await discoverIssuer(entry.issuer, {
        production: this.config.production,
        timeoutMs: this.timings.httpTimeoutMs,
      });
      const problem = metadataProblem(metadata, entry.kind, entry.tokenEndpointAuth);
      if (problem !== null) throw new TrustedIssuerError(problem);
    } catch (error) {
      if (error instanceof DiscoveryError) throw new TrustedIssuerError(error.message);
      throw error;
    }
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
          },
          tx,
        );
      });
    } catch (error) {
      // Another add of the same entry won between the checks above and this insert.
      if (isUniqueViolation(error))
        throw new TrustedIssuerError(`${entry.issuer} was added for ${entry.kind} meanwhile`);
      throw error;
    }
    return entry;
  }

  async list(organization: string): Promise<TrustedIssuer[]> {
    return this.repository.findByOrganization((await this.identity.organizationByName(organization)).id);
  }

  async remove(id: string): Promise<TrustedIssuer> {
    const removed = await this.unitOfWork.run(async (tx) => {
      const entry = await this.repository.delete(id, tx);
      if (entry !== null) {
        await this.audit.record(
          {
            action: 'trusted_issuer.removed',
            organizationId: entry.organizationId,
            targetType: 'trusted_issuer',
            targetId: entry.id,
            reason: entry.kind,
          },
          tx,
        );
      }
      return entry;
    });
    if (removed === null) throw new TrustedIssuerError(`no trusted issuer has the id ${id}`);
    return removed;
  }

  /** The client secret for the issuer's token endpoint (console single sign-on); null when it has none. */
  clientSecretOf(entry: TrustedIssuer): string | null {
    return entry.clientSecretEncrypted === null
      ? null
      : this.cipher.decrypt(entry.clientSecretEncrypted, entry.id, CLIENT_SECRET_FIELD);
  }

  /**
   * The options each kind takes. People: Gatehouse is a client of the issuer (its id is the ID tokens' audience).
   * Workloads: tokens name Gatehouse as their audience, by default its issuer URL; no client, no sign-in settings.
   */
  private kindSettings(
    input: NewTrustedIssuer,
  ): Pick<
    TrustedIssuer,
    'audience' | 'clientId' | 'clientSecretEncrypted' | 'tokenEndpointAuth' | 'emailDomains' | 'jitRole'
  > {
    if (input.tokenEndpointAuth !== undefined && input.clientSecret === undefined) {
      throw new TrustedIssuerError('--token-endpoint-auth needs --client-secret');
    }
    if (input.clientSecret !== undefined && !CLIENT_SECRET.test(input.clientSecret)) {
      throw new TrustedIssuerError('--client-secret must be 1 to 1024 characters, without spaces');
    }
    if (input.clientSecret !== undefined && input.clientId === undefined) {
      throw new TrustedIssuerError('--client-secret needs --client-id');
    }
    if (input.kind === 'workloads') {
      const peopleOnly = [
        ['--client-id', input.clientId],
        ['--client-secret', input.clientSecret],
        ['--email-domain', input.emailDomains.length > 0 ? input.emailDomains : undefined],
        ['--jit-role', input.jitRole],
      ].filter(([, value]) => value !== undefined);
      if (peopleOnly.length > 0) {
        throw new TrustedIssuerError(`${peopleOnly.map(([flag]) => flag).join(', ')}: only for --kind people`);
      }
      return {
        audience: input.audience ?? this.config.jwt.issuer,
        clientId: null,
        clientSecretEncrypted: null,
        tokenEndpointAuth: null,
        emailDomains: [],
        jitRole: null,
      };
    }
    if (input.clientId === undefined || input.clientSecret === undefined) {
      throw new TrustedIssuerError(
        "--kind people needs --client-id and --client-secret (Gatehouse's client at the issuer)",
      );
    }
    if (input.audience !== undefined && input.audience !== input.clientId) {
      throw new TrustedIssuerError('--audience of a people issuer is its --client-id (the audience of its ID tokens)');
    }
    return {
      audience: input.clientId,
      clientId: input.clientId,
      clientSecretEncrypted: null,
      tokenEndpointAuth: input.tokenEndpointAuth ?? 'client_secret_basic',
      emailDomains: [...new Set(input.emailDomains)],
      jitRole: input.jitRole ?? null,
    };
  }
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
