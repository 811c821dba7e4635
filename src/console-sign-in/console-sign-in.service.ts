import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { TokenService } from '../auth/token.service';
import { clientNetwork } from '../common/client-address';
import { AppError, ErrorCode, ErrorReason, tooManyRequests } from '../common/errors';
import { FAILURE_COUNTER, FailureCounter } from '../common/failure-counter';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { IdentityService } from '../identity/identity.service';
import { MembersService } from '../members/members.service';
import { Metrics } from '../metrics/metrics';
import type { Principal } from '../identity/principal';
import { Permission, Role, rolePermissions } from '../identity/roles';
import { ConsoleSignInRepository } from './console-sign-in.repository';
import { bindingCookieScope, clearedBindingCookie } from './sso/sso-rules';

/** How long a sign-in link can be used (docs/api.md#post-v1consolesessions). */
export const SIGN_IN_LINK_SECONDS = 600;
/** Lifetime of the session token a console sign-in gets. */
export const CONSOLE_SESSION_SECONDS = 3600;
/** Links expired longer ago than this are deleted whenever a new link is made. */
const KEEP_EXPIRED_MS = 24 * 3600 * 1000;
/** 32 random bytes, unpadded base64url: 43 characters. */
const CODE = /^[A-Za-z0-9_-]{43}$/;
const FAILURE_WINDOW_MS = 60_000;

/** The reason of each refused link (docs/api.md#errors). */
export const SignInRefusals = {
  invalid: 'sign_in_link_invalid',
  used: 'sign_in_link_used',
  expired: 'sign_in_link_expired',
  other_browser: 'sign_in_link_other_browser',
} as const satisfies Record<string, ErrorReason>;

/** The reason of each refused invitation (docs/api.md#post-v1consoleinvitationsaccept). */
const InvitationRefusals = {
  invalid: 'invitation_invalid',
  used: 'invitation_used',
  expired: 'invitation_expired',
} as const satisfies Record<string, ErrorReason>;

/** Any 401 of POST /v1/console/sessions: the challenge names no header scheme, the link is the credential. */
const refused = (reason: ErrorReason): AppError =>
  new AppError(reason, {
    headers: { 'WWW-Authenticate': 'SignInLink realm="gatehouse"' },
  });

export interface SignInLink {
  /** `<PUBLIC_BASE_URL>/console/sign-in#code=<code>`: the code is in the fragment, which browsers never send. */
  url: string;
  expiresAt: Date;
  expiresIn: number;
}

export interface ConsoleSession {
  sessionToken: string;
  expiresIn: number;
  userId: string;
  /** Who is signed in, for the console to say so. */
  email: string;
  organization: { id: string; name: string };
  role: Role;
  permissions: Permission[];
}

function hashCode(code: string): string {
  return createHash('sha256').update(code, 'utf8').digest('hex');
}

/** One-time sign-in links (docs/api.md#post-v1consolesessions): the code's SHA-256 alone is stored (256 bits of entropy). */
@Injectable()
export class ConsoleSignInService {
  private readonly failureLimit: number;
  private readonly publicBaseUrl: string;
  /** `Set-Cookie` that removes the binding cookie of single sign-on once its link is traded. */
  readonly clearedBindingCookie: string;

  constructor(
    private readonly links: ConsoleSignInRepository,
    private readonly identity: IdentityService,
    private readonly tokens: TokenService,
    @Inject(FAILURE_COUNTER) private readonly failures: FailureCounter,
    private readonly metrics: Metrics,
    private readonly audit: AuditService,
    private readonly members: MembersService,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.failureLimit = config.console.signInFailuresPerMinute;
    this.publicBaseUrl = config.console.publicBaseUrl;
    this.clearedBindingCookie = clearedBindingCookie(bindingCookieScope(config.console.publicBaseUrl));
  }

  /** A new link for a member of the organization (the `console-link` command). */
  async createLink(organizationName: string, email: string, now = new Date()): Promise<SignInLink> {
    const organization = await this.identity.organizationByName(organizationName);
    const user = await this.identity.userByEmail(email);
    if ((await this.identity.access(organization.id, user.id)) === null) {
      throw new AppError('not_a_member', { message: `${user.email} is not a member of ${organization.name}` });
    }
    return this.issueLink(organization.id, user.id, null, { now });
  }

  /**
   * A new link for a member already found, whose `console.signed_in` records `signInReason` (console single sign-on
   * hands its person over to the console this way, src/console-sign-in/sso/). With `bindingHash` (the SHA-256 of the
   * single sign-on's binding cookie) only the browser with that cookie may trade it.
   */
  async issueLink(
    organizationId: string,
    userId: string,
    signInReason: string | null,
    options: { bindingHash?: string; now?: Date } = {},
  ): Promise<SignInLink> {
    const now = options.now ?? new Date();
    const code = randomBytes(32).toString('base64url');
    const expiresAt = new Date(now.getTime() + SIGN_IN_LINK_SECONDS * 1000);
    await this.links.pruneExpired(new Date(now.getTime() - KEEP_EXPIRED_MS));
    await this.links.insert({
      codeHash: hashCode(code),
      organizationId,
      userId,
      createdAt: now,
      expiresAt,
      signInReason,
      bindingHash: options.bindingHash ?? null,
    });
    return { url: `${this.publicBaseUrl}/console/sign-in#code=${code}`, expiresAt, expiresIn: SIGN_IN_LINK_SECONDS };
  }

  /**
   * Trades a link's code for a session token; a link of single sign-on only with `binding`, the value of the browser's
   * binding cookie. Failed attempts are limited per client network (reserve, then check, as POST /v1/token does): a
   * refusal keeps its slot, anything else gives it back.
   */
  async signIn(
    code: string,
    address: string | undefined,
    request?: RequestContext,
    binding?: string,
  ): Promise<ConsoleSession> {
    return this.limited(address, () => this.trade(code, binding, request));
  }

  /**
   * Uses an invitation's code (docs/api.md#post-v1consoleinvitationsaccept): the person becomes a member as the
   * invitation says (MembersService) and is signed in as with a link, `console.signed_in` reason `invitation`. Failed
   * attempts count with the links'.
   */
  async acceptInvitation(code: string, address: string | undefined, request?: RequestContext): Promise<ConsoleSession> {
    return this.limited(address, async () => {
      const outcome = await this.members.acceptInvitation(code, request);
      if ('refused' in outcome) throw refused(InvitationRefusals[outcome.refused]);
      return this.sessionFor({ ...outcome.accepted, signInReason: 'invitation' }, request);
    });
  }

  /**
   * Failed attempts are limited per client network (reserve, then check, as POST /v1/token does): a refusal keeps its
   * slot, anything else gives it back.
   */
  private async limited(address: string | undefined, attempt: () => Promise<ConsoleSession>): Promise<ConsoleSession> {
    const slot = await this.failures.reserve(
      `console-sign-in:addr:${clientNetwork(address)}`,
      this.failureLimit,
      FAILURE_WINDOW_MS,
    );
    if (!slot.granted) {
      this.metrics.rateLimited('console_sign_in_failures');
      throw tooManyRequests('too_many_failed_sign_ins', slot.resetsInMs);
    }
    try {
      const session = await attempt();
      slot.release();
      return session;
    } catch (error) {
      // A refusal keeps its slot; anything else (the database unavailable) is not the caller's failure.
      if (!(error instanceof AppError && error.code === ErrorCode.UNAUTHENTICATED)) slot.release();
      throw error;
    }
  }

  /** Ends the member's session tokens (the route is @Authenticated({ sessionOnly: true })), audited as console.signed_out. */
  async signOut(principal: Principal, request?: RequestContext): Promise<void> {
    await this.identity.endSessions(principal.organizationId, principal.userId);
    await this.audit.record({
      action: 'console.signed_out',
      organizationId: principal.organizationId,
      actorUserId: principal.userId,
      targetType: 'user',
      targetId: principal.userId,
      request,
    });
  }

  /**
   * A sign-in or a refusal of a known link, in the link's organization (an unknown code names no
   * organization: its refusal is counted by the failure limit and the access log only).
   */
  private recordSignIn(
    link: { organizationId: string; userId: string; signInReason: string | null },
    reason: string | null,
    request?: RequestContext,
  ) {
    return this.audit.record({
      action: reason === null ? 'console.signed_in' : 'console.sign_in_refused',
      organizationId: link.organizationId,
      actorUserId: reason === null ? link.userId : null,
      targetType: 'user',
      targetId: link.userId,
      // A sign-in's reason is how the person was authenticated (`sso:<issuer id>`, `invitation`; null: an admin's link).
      reason: reason ?? link.signInReason,
      request,
    });
  }

  private async trade(code: string, binding: string | undefined, request?: RequestContext): Promise<ConsoleSession> {
    if (!CODE.test(code)) throw refused(SignInRefusals.invalid);
    const codeHash = hashCode(code);
    const now = new Date();
    // No cookie: a hash no link has (a binding is 32 random bytes), so a bound link opens in no browser without one.
    const link = await this.links.consume(codeHash, hashCode(binding ?? ''), now);
    if (link === null) {
      const known = await this.links.unusableReason(codeHash, now);
      if (known === null) throw refused(SignInRefusals.invalid);
      await this.recordSignIn(known, known.reason, request);
      throw refused(SignInRefusals[known.reason]);
    }
    return this.sessionFor(link, request);
  }

  /** A session for the member a link or an invitation names; removed since, it signs in no one (`member_removed`). */
  private async sessionFor(
    link: { organizationId: string; userId: string; signInReason: string | null },
    request?: RequestContext,
  ): Promise<ConsoleSession> {
    const access = await this.identity.readyForSession(link.organizationId, link.userId);
    if (access === null) {
      await this.recordSignIn(link, 'not_a_member', request);
      throw refused('member_removed');
    }
    const { role } = access;
    const organization = await this.identity.organizationById(link.organizationId);
    const email = (await this.identity.emailsOf([link.userId])).get(link.userId) ?? '';
    const sessionToken = await this.tokens.mint({
      userId: link.userId,
      organizationId: link.organizationId,
      lifetimeSeconds: CONSOLE_SESSION_SECONDS,
      tokenUse: 'session',
    });
    await this.recordSignIn(link, null, request);
    await this.identity.recordSignIn(link.organizationId, link.userId);
    return {
      sessionToken,
      expiresIn: CONSOLE_SESSION_SECONDS,
      userId: link.userId,
      email,
      organization: { id: organization.id, name: organization.name },
      role,
      permissions: rolePermissions(role),
    };
  }
}
