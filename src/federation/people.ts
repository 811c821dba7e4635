import { Injectable } from '@nestjs/common';
import type { RequestContext } from '../audit/request-context';
import { IdentityService } from '../identity/identity.service';
import type { Role } from '../identity/roles';
import { MembersService } from '../members/members.service';
import type { TrustedIssuer } from './trusted-issuer.entity';

/** RFC 5321's longest address, as `users.email` stores it. */
const MAX_EMAIL_LENGTH = 320;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/**
 * Why a signed-in person cannot be a member, before any database is read, or after (`no_access`: no member and the
 * issuer adds none; `member_removed`: an admin removed them).
 */
export type PersonRefusal =
  'no_email' | 'email_not_verified' | 'email_domain_not_allowed' | 'no_access' | 'member_removed';

export type PersonOutcome =
  { ok: true; email: string } | { ok: false; refusal: Exclude<PersonRefusal, 'no_access' | 'member_removed'> };

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

/** The user id of the member a person is, or why they are none (nothing is created then). */
export type MemberLookup = { ok: true; userId: string } | { ok: false; refusal: 'no_access' | 'member_removed' };

/**
 * The role the issuer gives a person who is no member yet, or null: just-in-time membership needs both the entry's
 * `--jit-role` and its e-mail domains (docs/federation.md#just-in-time-members). An entry with a role and no domains
 * (made before the rule) adds nobody: any issuer's token could otherwise make anyone, an admin of another organization
 * included, a member here.
 */
export function justInTimeRole(entry: Pick<TrustedIssuer, 'jitRole' | 'emailDomains'>): Role | null {
  return entry.jitRole !== null && entry.emailDomains.length > 0 ? entry.jitRole : null;
}

/**
 * People of an organization's identity provider as its members (docs/federation.md#just-in-time-members): the one
 * mapping of console single sign-on and of the token exchange of ID tokens. The person is the user with the token's
 * e-mail address (any case) and a membership in the issuer's organization. Without one: refused when an admin removed
 * them (until an admin adds them again); else, when the issuer adds people just in time ({@link justInTimeRole}), a new
 * member of its role (and a new user when there is none), through the member lifecycle (MembersService); otherwise no
 * access, and nothing is created.
 */
@Injectable()
export class FederatedPeople {
  constructor(
    private readonly identity: IdentityService,
    private readonly members: MembersService,
  ) {}

  /** The member a person's verified claims name: e-mail rules first, then the membership (or just in time). */
  async member(
    issuer: TrustedIssuer,
    claims: Record<string, unknown>,
    request?: RequestContext,
  ): Promise<MemberOutcome> {
    const person = personEmail(claims, issuer.emailDomains);
    if (!person.ok) return person;
    const member = await this.memberFor(issuer, person.email, request);
    if (!member.ok) return member;
    return { ok: true, userId: member.userId, organizationId: issuer.organizationId, email: person.email };
  }

  /** The member's user id, or why there is none: removed by an admin, or no member and the issuer adds none. */
  async memberFor(entry: TrustedIssuer, email: string, request?: RequestContext): Promise<MemberLookup> {
    const userId = await this.identity.userIdByEmail(email);
    if (userId !== null) {
      if ((await this.identity.access(entry.organizationId, userId)) !== null) return { ok: true, userId };
      if (await this.identity.wasRemoved(entry.organizationId, userId)) return { ok: false, refusal: 'member_removed' };
    }
    const role = justInTimeRole(entry);
    if (role === null) return { ok: false, refusal: 'no_access' };
    const user = await this.identity.ensureUser(email);
    try {
      const outcome = await this.members.joinJustInTime(entry.organizationId, user.id, role, request);
      if (outcome === 'removed') return { ok: false, refusal: 'member_removed' };
    } catch (error) {
      // A membership someone else made between the look-up and the insert (another sign-in, an administrator): it
      // keeps the role it was given.
      if (!isUniqueViolation(error) || (await this.identity.access(entry.organizationId, user.id)) === null)
        throw error;
    }
    return { ok: true, userId: user.id };
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
