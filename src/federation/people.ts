import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { IdentityService } from '../identity/identity.service';
import { UnitOfWork } from '../database/unit-of-work';
import type { TrustedIssuer } from './trusted-issuer.entity';

/** RFC 5321's longest address, as `users.email` stores it. */
const MAX_EMAIL_LENGTH = 320;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** Why a signed-in person cannot be a member, before any database is read, or after (`no_access`). */
export type PersonRefusal = 'no_email' | 'email_not_verified' | 'email_domain_not_allowed' | 'no_access';

export type PersonOutcome = { ok: true; email: string } | { ok: false; refusal: Exclude<PersonRefusal, 'no_access'> };

/**
 * The person's e-mail address, lower-cased as `users.email` holds it: the `email` claim is required; `email_verified`,
 * when the issuer sends it, must be `true` (an issuer that lets its users type any address would otherwise sign them
 * in as anyone); with e-mail domains configured, the address's domain must be one of them, exactly.
 */
export function personEmail(claims: Record<string, unknown>, emailDomains: readonly string[]): PersonOutcome {
  const { email } = claims;
  if (typeof email !== 'string' || email.length > MAX_EMAIL_LENGTH || !EMAIL.test(email.trim())) {
    return { ok: false, refusal: 'no_email' };
  }
  if ('email_verified' in claims && claims.email_verified !== true) return { ok: false, refusal: 'email_not_verified' };
  const normalized = email.trim().toLowerCase();
  const domain = normalized.slice(normalized.lastIndexOf('@') + 1);
  if (emailDomains.length > 0 && !emailDomains.includes(domain)) {
    return { ok: false, refusal: 'email_domain_not_allowed' };
  }
  return { ok: true, email: normalized };
}

/** The member a person of a `people` issuer is, in that issuer's organization. */
export interface FederatedMember {
  userId: string;
  organizationId: string;
  email: string;
}

export type MemberOutcome = ({ ok: true } & FederatedMember) | { ok: false; refusal: PersonRefusal };

/** A membership someone else made between the look-up and the insert (another sign-in, an administrator). */
class MembershipMadeMeanwhile extends Error {}

/**
 * People of an organization's identity provider as its members (docs/federation.md#people): the one mapping of console
 * single sign-on and of the token exchange of ID tokens. The person is the user with the token's e-mail address (any
 * case) and a membership in the issuer's organization; without one, and with the issuer's just-in-time role, a new
 * member of that role (and a new user when there is none), audited `member.added` with reason `sso` in the
 * membership's transaction; otherwise no access, and nothing is created.
 */
@Injectable()
export class FederatedPeople {
  constructor(
    private readonly identity: IdentityService,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
  ) {}

  /** The member a person's verified claims name: e-mail rules first, then the membership (or just in time). */
  async member(
    issuer: TrustedIssuer,
    claims: Record<string, unknown>,
    request?: RequestContext,
  ): Promise<MemberOutcome> {
    const person = personEmail(claims, issuer.emailDomains);
    if (!person.ok) return person;
    const userId = await this.memberFor(issuer, person.email, request);
    if (userId === null) return { ok: false, refusal: 'no_access' };
    return { ok: true, userId, organizationId: issuer.organizationId, email: person.email };
  }

  /** The member's user id; null when they are no member and the issuer adds none (nothing is created then). */
  async memberFor(entry: TrustedIssuer, email: string, request?: RequestContext): Promise<string | null> {
    const userId = await this.identity.userIdByEmail(email);
    if (userId !== null && (await this.identity.access(entry.organizationId, userId)) !== null) return userId;
    const role = entry.jitRole;
    if (role === null) return null;
    const user = await this.identity.ensureUser(email);
    try {
      await this.unitOfWork.run(async (tx) => {
        const change = await this.identity.setRole(entry.organizationId, user.id, role, tx);
        // Rolled back: a membership that appeared meanwhile keeps the role it was given.
        if (change !== 'added') throw new MembershipMadeMeanwhile();
        await this.audit.record(
          {
            action: 'member.added',
            organizationId: entry.organizationId,
            targetType: 'user',
            targetId: user.id,
            reason: 'sso',
            request,
          },
          tx,
        );
      });
    } catch (error) {
      if (!(error instanceof MembershipMadeMeanwhile) && !isUniqueViolation(error)) throw error;
      if ((await this.identity.access(entry.organizationId, user.id)) === null) throw error;
    }
    return user.id;
  }
}

/** PostgreSQL's unique_violation, SQLite's unique and primary-key constraints (also as TypeORM wraps them). */
function isUniqueViolation(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 4; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') return true;
    const next = current as { driverError?: unknown; cause?: unknown };
    current = next.driverError ?? next.cause;
  }
  return false;
}
