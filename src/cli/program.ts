import { Command, InvalidArgumentError, Option } from 'commander';
import { UUID } from '../common/uuid';
import { issuerShapeProblem } from '../federation/issuer-url';
import * as trustedIssuerCommands from '../federation/trusted-issuer.command';
import { ISSUER_KINDS, TOKEN_ENDPOINT_AUTH_METHODS } from '../federation/trusted-issuer.entity';
import {
  MAX_ACCESS_TOKEN_LIFETIME,
  MAX_KEY_LIFETIME_DAYS,
  MIN_ACCESS_TOKEN_LIFETIME,
  MIN_KEY_LIFETIME_DAYS,
} from '../identity/organization.entity';
import { isRole, Role } from '../identity/roles';
import { consoleLinkCommand } from '../console-sign-in/console-link.command';
import { audienceProblem } from '../resource-servers/audience';
import { DeclaredScope, parseScope } from '../resource-servers/scopes';
import * as resourceServerCommands from '../resource-servers/resource-server.command';
import * as commands from './commands';
import type { CliServices } from './commands';

/**
 * The admin command line's arguments (docs/operations.md#admin-cli), parsed with commander: every option is checked and
 * converted here, before any command runs (so a typo writes nothing), and each command receives typed options.
 */

/** Runs a command with the application's services, and prints what it returns. */
export type CommandRunner = (command: (services: CliServices) => Promise<object>) => Promise<void>;

/** Where the program writes help and parse errors. */
export interface ProgramOutput {
  writeOut(text: string): void;
  writeErr(text: string): void;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;
const MAX_EMAIL_LENGTH = 320;
const MAX_ORGANIZATION_NAME_LENGTH = 255;

function organizationName(value: string): string {
  const name = value.trim();
  if (name === '' || [...name].length > MAX_ORGANIZATION_NAME_LENGTH) {
    throw new InvalidArgumentError(`--org must be 1 to ${MAX_ORGANIZATION_NAME_LENGTH} characters`);
  }
  return name;
}

function email(value: string): string {
  const address = value.trim();
  if (!EMAIL.test(address) || address.length > MAX_EMAIL_LENGTH) {
    throw new InvalidArgumentError('--email must be an email address');
  }
  return address;
}

function audience(value: string): string {
  const problem = audienceProblem(value);
  if (problem !== null) throw new InvalidArgumentError(problem);
  return value;
}

function serverName(value: string): string {
  const name = value.trim();
  if (name === '' || [...name].length > 255) throw new InvalidArgumentError('--name must be 1 to 255 characters');
  return name;
}

function declaredScope(value: string, previous: DeclaredScope[]): DeclaredScope[] {
  const scope = parseScope(value);
  if (typeof scope === 'string') throw new InvalidArgumentError(scope);
  return [...previous, scope];
}

function issuer(value: string): string {
  const problem = issuerShapeProblem(value);
  if (problem !== null) throw new InvalidArgumentError(`--issuer ${problem}`);
  return value;
}

/** A value without spaces or control characters (a client id, a client secret, an audience). */
function token(flag: string, max: number): (value: string) => string {
  return (value) => {
    if (value.length === 0 || value.length > max || /[\s\p{Cc}]/u.test(value)) {
      throw new InvalidArgumentError(`${flag} must be 1 to ${max} characters, without spaces`);
    }
    return value;
  };
}

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Repeatable: each --email-domain adds one, in lower case. */
function emailDomain(value: string, previous: string[]): string[] {
  const domain = value.trim().toLowerCase();
  if (!DOMAIN.test(domain)) throw new InvalidArgumentError('--email-domain must be a domain name, e.g. example.com');
  return [...previous, domain];
}

function trustedIssuerId(value: string): string {
  const id = value.trim().toLowerCase();
  if (!UUID.test(id)) throw new InvalidArgumentError('--id must be a trusted issuer id (a UUID)');
  return id;
}

function role(value: string): Role {
  if (!isRole(value)) throw new InvalidArgumentError('--role must be admin, member or viewer');
  return value;
}

/** A plain decimal integer within bounds (no sign, no exponent, no fraction). */
function integer(flag: string, min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new InvalidArgumentError(`${flag} must be an integer from ${min} to ${max}`);
    }
    return Number(value);
  };
}

/** Days, or 'none' (a parser cannot return null: commander would store '' instead). */
function keyLifetimeDays(value: string): number | 'none' {
  if (value === 'none') return value;
  if (!/^\d+$/.test(value) || Number(value) < MIN_KEY_LIFETIME_DAYS || Number(value) > MAX_KEY_LIFETIME_DAYS) {
    throw new InvalidArgumentError(
      `--max-key-lifetime-days must be an integer from ${MIN_KEY_LIFETIME_DAYS} to ${MAX_KEY_LIFETIME_DAYS}, or none`,
    );
  }
  return Number(value);
}

/** on or off, exactly (a boolean setting). */
function onOff(flag: string): (value: string) => boolean {
  return (value) => {
    if (value !== 'on' && value !== 'off') throw new InvalidArgumentError(`${flag} must be on or off`);
    return value === 'on';
  };
}

const ORG = ['--org <name>', 'organization name (1-255 characters)'] as const;
const EMAIL_OPTION = ['--email <email>', "the user's e-mail address (stored in lower case)"] as const;
const ROLE_DESCRIPTION = 'admin, member or viewer';

/**
 * A new program for one run (commander keeps parsed values on the command objects). Errors make
 * `parseAsync` throw a CommanderError (exitOverride) instead of exiting the process.
 */
export function buildProgram(run: CommandRunner, output: ProgramOutput): Command {
  const program = new Command('gatehouse')
    .description(
      'Gatehouse admin command line: organizations, users, roles, session tokens, organization settings, resource servers and trusted issuers.',
    )
    .addHelpText(
      'after',
      [
        '',
        "Run it with the server's environment (the same .env, or the same variables): the same DATA_DIR and DATABASE_URL",
        '(else it works on another database, with other local secrets, and the server refuses its session tokens), and',
        'JWT_ISSUER or PUBLIC_BASE_URL (or PORT): the issuer of the session tokens it prints, and the address of the links',
        'console-link prints. Without PUBLIC_BASE_URL it assumes the server at http://localhost:<PORT> and asks it',
        'whether it accepts what was printed. It warns on stderr when it generates new local secrets, and when the server',
        'at the address it assumed does not answer or would refuse what it printed (saying why).',
        'Prints exactly one JSON object on stdout; errors go to stderr with exit code 2.',
        "Details: docs/operations.md, section 'Admin CLI'.",
      ].join('\n'),
    )
    // Set before the commands are added: each command copies them.
    .configureOutput({ writeOut: output.writeOut, writeErr: output.writeErr })
    .exitOverride()
    .showHelpAfterError("(run 'gatehouse --help' for the commands)")
    .allowExcessArguments(false);

  program
    .command('bootstrap')
    .description('create the organization, the user and the membership if missing; print a 1-hour session token')
    .requiredOption(...ORG, organizationName)
    .requiredOption(...EMAIL_OPTION, email)
    .option(
      '--role <role>',
      `${ROLE_DESCRIPTION}; sets the role (default: an existing membership keeps its role, a new one is admin)`,
      role,
    )
    .action((options: commands.BootstrapOptions) => run((services) => commands.bootstrap(services, options)));

  program
    .command('session')
    .description('mint a session token for an existing member')
    .requiredOption(...EMAIL_OPTION, email)
    .option('--org <name>', 'needed only when the user belongs to several organizations', organizationName)
    .option(
      '--ttl <seconds>',
      `token lifetime, 1..${MAX_ACCESS_TOKEN_LIFETIME}`,
      integer('--ttl', 1, MAX_ACCESS_TOKEN_LIFETIME),
      commands.DEFAULT_SESSION_TTL,
    )
    .action((options: commands.SessionOptions) => run((services) => commands.session(services, options)));

  program
    .command('set-role')
    .description("set the user's role in the organization (adds the membership if missing)")
    .requiredOption(...ORG, organizationName)
    .requiredOption(...EMAIL_OPTION, email)
    .requiredOption('--role <role>', ROLE_DESCRIPTION, role)
    .action((options: commands.SetRoleOptions) => run((services) => commands.setRole(services, options)));

  program
    .command('remove-member')
    .description('remove the user from the organization and revoke every key they have there (for good)')
    .requiredOption(...ORG, organizationName)
    .requiredOption(...EMAIL_OPTION, email)
    .action((options: commands.RemoveMemberOptions) => run((services) => commands.removeMember(services, options)));

  program
    .command('set-key-policy')
    .description('set the longest lifetime of keys created in the organization from now on')
    .requiredOption(...ORG, organizationName)
    .requiredOption(
      '--max-key-lifetime-days <days>',
      `${MIN_KEY_LIFETIME_DAYS}..${MAX_KEY_LIFETIME_DAYS}, or none for no limit`,
      keyLifetimeDays,
    )
    .action(({ org, maxKeyLifetimeDays }: { org: string; maxKeyLifetimeDays: number | 'none' }) =>
      run((services) =>
        commands.setKeyPolicy(services, {
          org,
          maxKeyLifetimeDays: maxKeyLifetimeDays === 'none' ? null : maxKeyLifetimeDays,
        }),
      ),
    );

  program
    .command('set-token-lifetime')
    .description('set the lifetime of the access tokens POST /v1/token issues from now on')
    .requiredOption(...ORG, organizationName)
    .requiredOption(
      '--seconds <seconds>',
      `${MIN_ACCESS_TOKEN_LIFETIME}..${MAX_ACCESS_TOKEN_LIFETIME}`,
      integer('--seconds', MIN_ACCESS_TOKEN_LIFETIME, MAX_ACCESS_TOKEN_LIFETIME),
    )
    .action((options: commands.SetTokenLifetimeOptions) =>
      run((services) => commands.setTokenLifetime(services, options)),
    );

  program
    .command('set-key-allowlist-policy')
    .description(
      'set whether keys created in the organization from now on must carry an IP allowlist (not every address)',
    )
    .requiredOption(...ORG, organizationName)
    .requiredOption(
      '--required <on|off>',
      'on (required) or off (not required); keys made before keep working without one',
      onOff('--required'),
    )
    .action((options: commands.SetKeyAllowlistPolicyOptions) =>
      run((services) => commands.setKeyAllowlistPolicy(services, options)),
    );

  program
    .command('console-link')
    .description('print a one-time sign-in link to the web console for a member (valid 10 minutes, usable once)')
    .requiredOption(...ORG, organizationName)
    .requiredOption(...EMAIL_OPTION, email)
    .action((options: { org: string; email: string }) =>
      run((services) => consoleLinkCommand(services.consoleSignIn, options)),
    );

  const AUDIENCE = [
    '--audience <uri>',
    "the https:// URI the resource server is known by (the tokens' aud)",
    audience,
  ] as const;
  const SCOPE = [
    '--scope <name=description>',
    "a scope it declares, with what the consent page says of it (repeatable; e.g. 'tools:read=List and call tools')",
    declaredScope,
    [] as DeclaredScope[],
  ] as const;
  const resourceServer = program
    .command('resource-server')
    .description('register the services that accept Gatehouse tokens (introspection, resource, forward auth)');
  resourceServer
    .command('add')
    .description('register a resource server; prints its client_id and client_secret (shown only this once)')
    .requiredOption('--name <name>', 'a name for people (1-255 characters)', serverName)
    .requiredOption(...AUDIENCE)
    .option(...SCOPE)
    .action((options: { name: string; audience: string; scope: DeclaredScope[] }) =>
      run((services) => resourceServerCommands.addResourceServer(services.resourceServers, options)),
    );
  resourceServer
    .command('set-scopes')
    .description('replace the scopes a resource server declares (none given: it declares none)')
    .requiredOption(...AUDIENCE)
    .option(...SCOPE)
    .action((options: { audience: string; scope: DeclaredScope[] }) =>
      run((services) => resourceServerCommands.setResourceServerScopes(services.resourceServers, options)),
    );
  resourceServer
    .command('list')
    .description('list the registered resource servers (never their secrets)')
    .action(() => run((services) => resourceServerCommands.listResourceServers(services.resourceServers)));
  resourceServer
    .command('remove')
    .description('remove a resource server: its secret stops at once, and tokens for its audience are refused')
    .requiredOption(...AUDIENCE)
    .action((options: { audience: string }) =>
      run((services) => resourceServerCommands.removeResourceServer(services.resourceServers, options)),
    );
  resourceServer
    .command('rotate-secret')
    .description('give a resource server a new client_secret (printed once); the old one stops at once')
    .requiredOption(...AUDIENCE)
    .action((options: { audience: string }) =>
      run((services) => resourceServerCommands.rotateResourceServerSecret(services.resourceServers, options)),
    );

  const trustedIssuer = program
    .command('trusted-issuer')
    .description("the identity providers an organization trusts: its people's single sign-on, its workloads' tokens");
  trustedIssuer
    .command('add')
    .description('trust an issuer for the organization, once its discovery document names it exactly')
    .requiredOption(...ORG, organizationName)
    .requiredOption(
      '--issuer <url>',
      'the issuer identifier (https://; http:// on a loopback host outside production)',
      issuer,
    )
    .addOption(
      new Option('--kind <kind>', 'people (single sign-on) or workloads (token exchange)')
        .choices(ISSUER_KINDS)
        .makeOptionMandatory(),
    )
    .option(
      '--audience <aud>',
      "workloads: the aud their tokens carry (default: Gatehouse's issuer URL/organizations/<organization id>)",
      token('--audience', 255),
    )
    .option(
      '--client-id <id>',
      "people: Gatehouse's client id at the issuer (the ID tokens' audience), registered there with the redirect URI " +
        '<PUBLIC_BASE_URL>/v1/console/sso/callback if its discovery document has ' +
        'authorization_response_iss_parameter_supported: true, else <PUBLIC_BASE_URL>/v1/console/sso/callback/<org> ' +
        '(the name URL-encoded)',
      token('--client-id', 255),
    )
    // Checked by the service, whose refusal does not repeat the value (commander's would).
    .option('--client-secret <secret>', 'people: its client secret (stored encrypted, never printed)')
    .addOption(
      new Option(
        '--token-endpoint-auth <method>',
        'people: how the client authenticates at the token endpoint (default: client_secret_basic)',
      ).choices(TOKEN_ENDPOINT_AUTH_METHODS),
    )
    .option(
      '--email-domain <domain>',
      'people: an e-mail domain they must have (repeatable; none: any; --jit-role needs at least one)',
      emailDomain,
      [],
    )
    .option(
      '--jit-role <role>',
      `people: ${ROLE_DESCRIPTION}; the role of a member created at their first sign-in (needs --email-domain; ` +
        'never someone an admin removed)',
      role,
    )
    .option(
      '--allow-origin <origin>',
      "an origin besides the issuer's own where its discovery document may place its key set and endpoints " +
        '(repeatable; e.g. https://www.googleapis.com for Google)',
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .action((options: trustedIssuerCommands.AddTrustedIssuerOptions) =>
      run((services) => trustedIssuerCommands.addTrustedIssuer(services.trustedIssuers, options)),
    );
  trustedIssuer
    .command('list')
    .description("list the organization's trusted issuers (never their client secrets)")
    .requiredOption(...ORG, organizationName)
    .action((options: { org: string }) =>
      run((services) => trustedIssuerCommands.listTrustedIssuers(services.trustedIssuers, options)),
    );
  trustedIssuer
    .command('set-origins')
    .description(
      "replace the origins besides the issuer's own where its key set and endpoints may be, once its discovery " +
        "document passes with them (none given: the issuer's own only)",
    )
    .requiredOption('--id <id>', 'the trusted issuer id (list shows them)', trustedIssuerId)
    .option(
      '--allow-origin <origin>',
      'an allowed origin (repeatable; e.g. https://www.googleapis.com for Google)',
      (value: string, previous: string[]) => [...previous, value],
      [],
    )
    .action((options: { id: string; allowOrigin: string[] }) =>
      run((services) => trustedIssuerCommands.setTrustedIssuerOrigins(services.trustedIssuers, options)),
    );
  trustedIssuer
    .command('remove')
    .description(
      'stop trusting an issuer: its tokens are refused from the next exchange, its workload identities revoked',
    )
    .requiredOption('--id <id>', 'the trusted issuer id (list shows them)', trustedIssuerId)
    .action((options: { id: string }) =>
      run((services) => trustedIssuerCommands.removeTrustedIssuer(services.trustedIssuers, options)),
    );

  for (const command of [...program.commands, ...resourceServer.commands, ...trustedIssuer.commands]) {
    const name = command.parent === program ? command.name() : `${command.parent?.name()} ${command.name()}`;
    command.showHelpAfterError(`(run 'gatehouse ${name} --help' for its options)`);
  }
  return program;
}
