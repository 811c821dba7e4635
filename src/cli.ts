import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger } from 'nestjs-pino';
import { pino } from 'pino';
import { AppModule } from './app.module';
import { TokenService } from './auth/token.service';
import { AppError } from './common/errors';
import { consoleLinkCommand } from './console-sign-in/console-link.command';
import type { Environment } from './config/configuration';
import { IdentityService } from './identity/identity.service';
import { MAX_ACCESS_TOKEN_LIFETIME, MIN_ACCESS_TOKEN_LIFETIME } from './identity/organization.entity';
import { isRole, Role } from './identity/roles';

/**
 * Admin command line (docs/operations.md#admin-cli). Prints exactly one JSON object on stdout; errors go to
 * stderr with exit code 2. Same configuration (and database) as the server.
 */
export class UsageError extends Error {}

const USAGE = `usage: gatehouse-cli <command> [options]
  bootstrap --org NAME --email EMAIL [--role admin|member|viewer]
  session --email EMAIL [--org NAME] [--ttl SECONDS]
  set-role --org NAME --email EMAIL --role ROLE
  remove-member --org NAME --email EMAIL
  set-token-lifetime --org NAME --seconds N
  console-link --org NAME --email EMAIL`;

const DEFAULT_SESSION_TTL = 3600;
const EMAIL = /^[^\s@]+@[^\s@]+$/;

type Options = Record<string, string | undefined>;

function required(options: Options, name: string): string {
  const value = options[name];
  if (value === undefined || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value.trim();
}

function email(options: Options): string {
  const value = required(options, 'email');
  if (!EMAIL.test(value) || value.length > 320) throw new UsageError('--email must be an email address');
  return value;
}

function role(options: Options, fallback?: Role): Role {
  const value = options.role ?? fallback;
  if (value === undefined) throw new UsageError('--role is required');
  if (!isRole(value)) throw new UsageError('--role must be admin, member or viewer');
  return value;
}

function integer(options: Options, name: string, fallback: number | undefined, min: number, max: number): number {
  const raw = options[name];
  if (raw === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`);
    return fallback;
  }
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}`);
  }
  return Number(raw);
}

function organizationName(options: Options): string {
  const name = required(options, 'org');
  if ([...name].length > 255) throw new UsageError('--org must be at most 255 characters');
  return name;
}

async function execute(app: INestApplicationContext, command: string, options: Options): Promise<object> {
  const identity = app.get(IdentityService);
  const tokens = app.get(TokenService);
  switch (command) {
    case 'bootstrap': {
      // Every option is checked before anything is written: a typo must not leave an organization behind.
      const name = organizationName(options);
      const address = email(options);
      const wanted = role(options, 'admin');
      const organization = await identity.ensureOrganization(name);
      const user = await identity.ensureUser(address);
      // An explicit --role sets it; without one an existing membership keeps its role.
      const granted =
        options.role === undefined
          ? await identity.ensureMembership(organization.id, user.id, wanted)
          : (await identity.setRole(organization.id, user.id, wanted), wanted);
      const lifetime = DEFAULT_SESSION_TTL;
      return {
        organization_id: organization.id,
        user_id: user.id,
        role: granted,
        session_token: await tokens.mint({
          userId: user.id,
          organizationId: organization.id,
          lifetimeSeconds: lifetime,
          tokenUse: 'session',
        }),
        expires_in: lifetime,
      };
    }
    case 'session': {
      const ttl = integer(options, 'ttl', DEFAULT_SESSION_TTL, 1, MAX_ACCESS_TOKEN_LIFETIME);
      const user = await identity.userByEmail(email(options));
      let organizationId: string;
      if (options.org !== undefined) {
        organizationId = (await identity.organizationByName(organizationName(options))).id;
        if ((await identity.access(organizationId, user.id)) === null) {
          throw new UsageError(`${user.email} is not a member of ${options.org}`);
        }
      } else {
        const memberships = await identity.membershipsOf(user.id);
        if (memberships.length === 0) throw new UsageError(`${user.email} is not a member of any organization`);
        if (memberships.length > 1) throw new UsageError(`${user.email} belongs to several organizations: pass --org`);
        organizationId = memberships[0].organizationId;
      }
      return {
        session_token: await tokens.mint({
          userId: user.id,
          organizationId,
          lifetimeSeconds: ttl,
          tokenUse: 'session',
        }),
        expires_in: ttl,
      };
    }
    case 'set-role': {
      const wanted = role(options);
      const organization = await identity.organizationByName(organizationName(options));
      const user = await identity.userByEmail(email(options));
      await identity.setRole(organization.id, user.id, wanted);
      return { organization_id: organization.id, user_id: user.id, role: wanted };
    }
    case 'remove-member': {
      const organization = await identity.organizationByName(organizationName(options));
      const user = await identity.userByEmail(email(options));
      if (!(await identity.removeMember(organization.id, user.id))) {
        throw new UsageError(`${user.email} is not a member of ${organization.name}`);
      }
      return { removed: true };
    }
    case 'set-token-lifetime': {
      const seconds = integer(options, 'seconds', undefined, MIN_ACCESS_TOKEN_LIFETIME, MAX_ACCESS_TOKEN_LIFETIME);
      const organization = await identity.organizationByName(organizationName(options));
      await identity.setAccessTokenLifetime(organization.id, seconds);
      return { organization_id: organization.id, access_token_lifetime: seconds };
    }
    case 'console-link':
      return consoleLinkCommand(app, { org: organizationName(options), email: email(options) });
    default:
      throw new UsageError(`unknown command: ${command}`);
  }
}

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs one command; `env` given -> exactly that environment (tests), else process.env and .env. */
export async function runCli(argv: string[], env?: Environment): Promise<CliResult> {
  let command: string | undefined;
  let options: Options;
  try {
    const parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        org: { type: 'string' },
        email: { type: 'string' },
        role: { type: 'string' },
        ttl: { type: 'string' },
        seconds: { type: 'string' },
      },
    });
    if (parsed.positionals.length !== 1) throw new UsageError('exactly one command is expected');
    command = parsed.positionals[0];
    options = parsed.values;
  } catch (error) {
    return { exitCode: 2, stdout: '', stderr: `error: ${(error as Error).message}\n${USAGE}\n` };
  }

  let app: INestApplicationContext | undefined;
  try {
    // Logs are JSON lines on stderr (stdout carries the one result); warnings and errors only,
    // unless LOG_LEVEL asks for more.
    const logLevel = (env ?? process.env).LOG_LEVEL === undefined ? 'warn' : undefined;
    app = await NestFactory.createApplicationContext(
      AppModule.forRoot({ env, logDestination: pino.destination({ fd: 2, sync: true }), logLevel }),
      { bufferLogs: true, abortOnError: false },
    );
    app.useLogger(app.get(Logger));
    const result = await execute(app, command, options);
    return { exitCode: 0, stdout: `${JSON.stringify(result)}\n`, stderr: '' };
  } catch (error) {
    const message =
      error instanceof UsageError || error instanceof AppError
        ? error.message
        : String((error as Error)?.message ?? error);
    return { exitCode: 2, stdout: '', stderr: `error: ${message}\n${error instanceof UsageError ? `${USAGE}\n` : ''}` };
  } finally {
    await app?.close();
  }
}

if (require.main === module) {
  // Nest's own logger writes to stdout; stdout belongs to the one JSON result.
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr);
  void runCli(process.argv.slice(2)).then((result) => {
    write(result.stdout);
    process.stderr.write(result.stderr);
    process.exitCode = result.exitCode;
  });
}
