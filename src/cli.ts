#!/usr/bin/env node
import { ResourceServersService } from './resource-servers/resource-servers.service';
import { TrustedIssuersService } from './federation/trusted-issuers.service';
import { RegisteredClients } from './oauth/clients/registered-clients.service';
import 'reflect-metadata';
import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CommanderError } from 'commander';
import { Logger } from 'nestjs-pino';
import { pino } from 'pino';
import { MembersService } from './members/members.service';
import { AppModule, AppModuleOptions } from './app.module';
import { TokenService } from './auth/token.service';
import { CliServices } from './cli/commands';
import { cliMessage } from './cli/error-wording';
import { environmentWarnings, serverToCheck } from './cli/environment-warnings';
import { checkServer } from './cli/server-check';
import { ConsoleSignInService } from './console-sign-in/console-sign-in.service';
import { buildProgram } from './cli/program';
import { APP_CONFIG, SECRETS } from './config/config.module';
import type { AppConfiguration, Environment } from './config/configuration';
import type { Secrets } from './config/local-secrets';
import { IdentityService } from './identity/identity.service';
import { OrganizationSettingsService } from './organization-settings/organization-settings.service';

/** The admin CLI's entry point (docs/operations.md#admin-cli): boots the context for one command, prints, exits. */

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Exit code of every error: a refused argument, an unknown command, a failed command. */
const ERROR_EXIT_CODE = 2;

/**
 * The application context the commands run against: the CLI boots one per command (runCli), closed after it. Exported
 * for callers that run many commands against one context (the tests), which pass it as `CliOptions.context`.
 */
export async function createCliContext(
  env: Environment | undefined,
  options: Pick<CliOptions, 'workerDirectory'> = {},
): Promise<INestApplicationContext> {
  // Logs are JSON lines on stderr (stdout carries the one result); warnings and errors only,
  // unless LOG_LEVEL asks for more.
  const app = await NestFactory.createApplicationContext(
    AppModule.forRoot({
      env,
      logDestination: pino.destination({ fd: 2, sync: true }),
      defaultLogLevel: 'warn',
      workerDirectory: options.workerDirectory,
    }),
    { bufferLogs: true, abortOnError: false },
  );
  app.useLogger(app.get(Logger));
  return app;
}

export interface CliOptions extends Pick<AppModuleOptions, 'workerDirectory'> {
  /**
   * A context from {@link createCliContext} with the same `env`, to run the command against instead of booting one;
   * it stays open. Its boot-time facts (local secrets generated) are those of its own boot.
   */
  context?: INestApplicationContext;
}

/** Runs one command; `env` given -> exactly that environment (tests), else process.env and .env. */
export async function runCli(argv: string[], env?: Environment, options: CliOptions = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  let app: INestApplicationContext | undefined;
  let commandName = '';
  const program = buildProgram(
    async (command) => {
      // Booted only once the arguments are good: --help and a typo never touch the database.
      app = options.context ?? (await createCliContext(env, options));
      const services: CliServices = {
        identity: app.get(IdentityService),
        tokens: app.get(TokenService),
        settings: app.get(OrganizationSettingsService),
        consoleSignIn: app.get(ConsoleSignInService),
        members: app.get(MembersService),
        resourceServers: app.get(ResourceServersService),
        trustedIssuers: app.get(TrustedIssuersService),
        oauthClients: app.get(RegisteredClients),
      };
      const hadOrganizations = await services.identity.hasOrganizations();
      const result = await command(services);
      stdout += `${JSON.stringify(result)}\n`;
      const config = app.get<AppConfiguration>(APP_CONFIG);
      const server = serverToCheck(commandName, config, services.tokens.keys.signingKid, result);
      const warnings = environmentWarnings({
        command: commandName,
        config,
        hadOrganizations,
        generatedSecretsFile: app.get<Secrets>(SECRETS).generatedFile,
        check: server === undefined ? undefined : await checkServer(server),
      });
      for (const warning of warnings) stderr += `warning: ${warning}\n`;
    },
    { writeOut: (text) => (stdout += text), writeErr: (text) => (stderr += text) },
  );
  program.hook('preAction', (_program, action) => {
    commandName = action.name();
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return { exitCode: 0, stdout, stderr };
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help (and `help`): exit 0 with the help on stdout. Commander has written any error to
      // stderr already.
      if (error.exitCode === 0) return { exitCode: 0, stdout, stderr };
      // No command (or `help` with an unknown one): commander printed the help alone, say why first.
      const why =
        error.code === 'commander.help'
          ? `error: ${argv.length === 0 ? 'no command given' : `unknown command '${argv[argv.length - 1]}'`}\n`
          : '';
      return { exitCode: ERROR_EXIT_CODE, stdout: '', stderr: why + stderr };
    }
    // From the command itself: a CommandError, an AppError (organization not found, ...), or the
    // application failing to start (a bad setting, an unreachable database).
    return { exitCode: ERROR_EXIT_CODE, stdout: '', stderr: `${stderr}error: ${cliMessage(error)}\n` };
  } finally {
    if (app !== options.context) await app?.close();
  }
}

if (require.main === module) {
  // Nest's own logger writes to stdout; stdout belongs to the one JSON result (or the help).
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr);
  void runCli(process.argv.slice(2)).then((result) => {
    write(result.stdout);
    process.stderr.write(result.stderr);
    process.exitCode = result.exitCode;
  });
}
