import type { Command } from 'commander';
import { consoleLinkCommand } from '../console-sign-in/console-link.command';
import { MAX_ACCESS_TOKEN_LIFETIME } from '../identity/organization.entity';
import { EMAIL_OPTION, email, integer, ORG, organizationName, role, ROLE_DESCRIPTION } from './arguments';
import * as commands from './commands';

/** Organizations, their members and what the members sign in with: bootstrap, session, set-role, remove-member, console-link. */
export function addMemberCommands(program: Command, run: commands.CommandRunner): void {
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
    .command('console-link')
    .description('print a one-time sign-in link to the web console for a member (valid 10 minutes, usable once)')
    .requiredOption(...ORG, organizationName)
    .requiredOption(...EMAIL_OPTION, email)
    .action((options: { org: string; email: string }) =>
      run((services) => consoleLinkCommand(services.consoleSignIn, options)),
    );
}
