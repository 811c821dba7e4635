import { Command, InvalidArgumentError } from 'commander';
import { DeclaredScope, parseScope } from '../resource-servers/scopes';
import * as resourceServerCommands from '../resource-servers/resource-server.command';
import { audience, serverName } from './arguments';
import type { CommandRunner } from './commands';

function declaredScope(value: string, previous: DeclaredScope[]): DeclaredScope[] {
  const scope = parseScope(value);
  if (typeof scope === 'string') throw new InvalidArgumentError(scope);
  return [...previous, scope];
}

/** `resource-server add|set-scopes|list|remove|rotate-secret`: the services that accept Gatehouse's tokens. */
export function addResourceServerCommands(program: Command, run: CommandRunner): void {
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
}
