import { Command, InvalidArgumentError, Option } from 'commander';
import { UUID } from '../common/uuid';
import { redirectUriProblem } from '../oauth/clients/client-registration';
import * as oauthClientCommands from '../oauth/clients/oauth-client.command';
import { REGISTERED_CLIENT_KINDS, RegisteredClientKind } from '../oauth/clients/registered-client.entity';
import { ORG, organizationName, serverName } from './arguments';
import type { CommandRunner } from './commands';

function redirectUri(value: string, previous: string[]): string[] {
  const problem = redirectUriProblem(value);
  if (problem !== null) throw new InvalidArgumentError(problem);
  return [...previous, value];
}

function clientId(value: string): string {
  const id = value.trim().toLowerCase();
  if (!UUID.test(id)) throw new InvalidArgumentError('--id must be a registered client_id (a UUID)');
  return id;
}

/** `oauth-client add|list|remove`: the OAuth clients registered with Gatehouse (docs/mcp.md#clients). */
export function addOAuthClientCommands(program: Command, run: CommandRunner): void {
  const oauthClient = program
    .command('oauth-client')
    .description('OAuth clients registered with Gatehouse: dynamically (RFC 7591), or for an organization');
  oauthClient
    .command('add')
    .description("register an organization's client for an internal app; prints a confidential one's secret once")
    .requiredOption(...ORG, organizationName)
    .requiredOption('--name <name>', 'the name people see on the consent page (1-255 characters)', serverName)
    .requiredOption(
      '--redirect-uri <uri>',
      'https, or http on a loopback host; no fragment (repeatable, at most 10)',
      redirectUri,
      [] as string[],
    )
    .option('--confidential', 'give it a client_secret, which it must send to the token endpoint', false)
    .action((options: { org: string; name: string; redirectUri: string[]; confidential: boolean }) =>
      run((services) => oauthClientCommands.addOAuthClient(services, options)),
    );
  oauthClient
    .command('list')
    .description('list registered clients, newest first (never their secrets)')
    .option(...ORG, organizationName)
    .addOption(new Option('--kind <kind>', 'only dynamic or organization clients').choices(REGISTERED_CLIENT_KINDS))
    .action((options: { org?: string; kind?: RegisteredClientKind }) =>
      run((services) => oauthClientCommands.listOAuthClients(services, options)),
    );
  oauthClient
    .command('remove')
    .description('remove a registered client: its grants are revoked, its tokens refused at once')
    .requiredOption('--id <client_id>', 'the client_id', clientId)
    .action((options: { id: string }) =>
      run((services) => oauthClientCommands.removeOAuthClient(services.oauthClients, options)),
    );
}
