import type { ConsoleSignInService } from '../console-sign-in/console-sign-in.service';
import type { TokenService } from '../auth/token.service';
import type { IdentityService } from '../identity/identity.service';
import type { MembersService } from '../members/members.service';
import type { Role } from '../identity/roles';
import type { OrganizationSettingsService } from '../organization-settings/organization-settings.service';
import type { ResourceServersService } from '../resource-servers/resource-servers.service';
import type { TrustedIssuersService } from '../federation/trusted-issuers.service';
import type { RegisteredClients } from '../oauth/clients/registered-clients.service';

/**
 * What each admin command does (docs/operations.md#admin-cli), given options already parsed and checked by the program
 * (program.ts): no argument parsing here, and no output: each command returns the one JSON object the CLI prints.
 */

/** A refusal only the database can tell (not a member, several organizations): exit code 2. */
export class CommandError extends Error {}

/** The services the commands use, taken from the application context. */
export interface CliServices {
  identity: IdentityService;
  tokens: TokenService;
  settings: OrganizationSettingsService;
  consoleSignIn: ConsoleSignInService;
  members: MembersService;
  resourceServers: ResourceServersService;
  trustedIssuers: TrustedIssuersService;
  oauthClients: RegisteredClients;
}

/** Runs a command with the application's services, and prints what it returns (cli.ts). */
export type CommandRunner = (command: (services: CliServices) => Promise<object>) => Promise<void>;

export const DEFAULT_SESSION_TTL = 3600;

export interface BootstrapOptions {
  org: string;
  email: string;
  /** Absent: an existing membership keeps its role, a new one is `admin`. */
  role?: Role;
}

export interface BootstrapResult {
  organization_id: string;
  user_id: string;
  role: Role;
  session_token: string;
  expires_in: number;
}

export async function bootstrap(services: CliServices, options: BootstrapOptions): Promise<BootstrapResult> {
  const { identity, tokens } = services;
  const organization = await identity.ensureOrganization(options.org);
  const user = await identity.ensureUser(options.email);
  // An explicit --role sets it; without one an existing membership keeps its role.
  let role: Role;
  if (options.role === undefined) {
    role = await services.members.ensureMember(organization.id, user.id, 'admin');
  } else {
    await services.members.setRole(organization.id, user.id, options.role);
    role = options.role;
  }
  await identity.readyForSession(organization.id, user.id);
  return {
    organization_id: organization.id,
    user_id: user.id,
    role,
    session_token: await tokens.mint({
      userId: user.id,
      organizationId: organization.id,
      lifetimeSeconds: DEFAULT_SESSION_TTL,
      tokenUse: 'session',
    }),
    expires_in: DEFAULT_SESSION_TTL,
  };
}

export interface SessionOptions {
  email: string;
  /** Needed only when the user belongs to several organizations. */
  org?: string;
  ttl: number;
}

export async function session(
  services: CliServices,
  options: SessionOptions,
): Promise<{ session_token: string; expires_in: number }> {
  const { identity, tokens } = services;
  const user = await identity.userByEmail(options.email);
  let organizationId: string;
  if (options.org !== undefined) {
    organizationId = (await identity.organizationByName(options.org)).id;
    if ((await identity.access(organizationId, user.id)) === null) {
      throw new CommandError(`${user.email} is not a member of ${options.org}`);
    }
  } else {
    const memberships = await identity.membershipsOf(user.id);
    if (memberships.length === 0) throw new CommandError(`${user.email} is not a member of any organization`);
    if (memberships.length > 1) throw new CommandError(`${user.email} belongs to several organizations: pass --org`);
    organizationId = memberships[0].organizationId;
  }
  await identity.readyForSession(organizationId, user.id);
  return {
    session_token: await tokens.mint({
      userId: user.id,
      organizationId,
      lifetimeSeconds: options.ttl,
      tokenUse: 'session',
    }),
    expires_in: options.ttl,
  };
}

export interface SetRoleOptions {
  org: string;
  email: string;
  role: Role;
}

export async function setRole(
  services: CliServices,
  options: SetRoleOptions,
): Promise<{ organization_id: string; user_id: string; role: Role }> {
  const organization = await services.identity.organizationByName(options.org);
  const user = await services.identity.userByEmail(options.email);
  await services.members.setRole(organization.id, user.id, options.role);
  return { organization_id: organization.id, user_id: user.id, role: options.role };
}

export interface RemoveMemberOptions {
  org: string;
  email: string;
}

/**
 * Removes the membership and revokes every key and workload identity the user has in the organization, in one
 * transaction (docs/operations.md#admin-cli): adding the user back later revives none of them, and single sign-on
 * does not add them back (only bootstrap or set-role does).
 */
export async function removeMember(
  services: CliServices,
  options: RemoveMemberOptions,
): Promise<{ removed: true; revoked_keys: number }> {
  const organization = await services.identity.organizationByName(options.org);
  const user = await services.identity.userByEmail(options.email);
  const { removed, revokedKeys } = await services.members.remove(organization.id, user.id);
  if (!removed) throw new CommandError(`${user.email} is not a member of ${organization.name}`);
  return { removed: true, revoked_keys: revokedKeys };
}

// Settings changes go through the same service as PATCH /v1/organization, and are recorded the same
// way (organization.updated), with no actor.

export interface SetKeyPolicyOptions {
  org: string;
  /** null: no policy. */
  maxKeyLifetimeDays: number | null;
}

export async function setKeyPolicy(
  services: CliServices,
  options: SetKeyPolicyOptions,
): Promise<{ organization_id: string; max_key_lifetime_days: number | null }> {
  const organization = await services.identity.organizationByName(options.org);
  const updated = await services.settings.update(
    organization.id,
    { maxKeyLifetimeDays: options.maxKeyLifetimeDays },
    null,
  );
  return { organization_id: updated.id, max_key_lifetime_days: updated.maxKeyLifetimeDays };
}

export interface SetTokenLifetimeOptions {
  org: string;
  seconds: number;
}

export async function setTokenLifetime(
  services: CliServices,
  options: SetTokenLifetimeOptions,
): Promise<{ organization_id: string; access_token_lifetime: number }> {
  const organization = await services.identity.organizationByName(options.org);
  const updated = await services.settings.update(organization.id, { accessTokenLifetime: options.seconds }, null);
  return { organization_id: updated.id, access_token_lifetime: updated.accessTokenLifetime };
}

export interface SetKeyAllowlistPolicyOptions {
  org: string;
  /** The organization's require_key_allowlist: new keys must carry an allowlist that does not allow every address. */
  required: boolean;
}

export async function setKeyAllowlistPolicy(
  services: CliServices,
  options: SetKeyAllowlistPolicyOptions,
): Promise<{ organization_id: string; require_key_allowlist: boolean }> {
  const organization = await services.identity.organizationByName(options.org);
  const updated = await services.settings.update(organization.id, { requireKeyAllowlist: options.required }, null);
  return { organization_id: updated.id, require_key_allowlist: updated.requireKeyAllowlist };
}
