import { Command } from 'commander';
import type { CommandRunner } from './commands';
import { addMemberCommands } from './member-commands';
import { addOAuthClientCommands } from './oauth-client-commands';
import { addOrganizationSettingsCommands } from './organization-settings-commands';
import { addResourceServerCommands } from './resource-server-commands';
import { addTrustedIssuerCommands } from './trusted-issuer-commands';

/**
 * The admin command line's arguments (docs/operations.md#admin-cli), parsed with commander: every option is checked and
 * converted before any command runs (arguments.ts; so a typo writes nothing), and each command receives typed options.
 * One file per command group.
 */

/** Where the program writes help and parse errors. */
export interface ProgramOutput {
  writeOut(text: string): void;
  writeErr(text: string): void;
}

/**
 * A new program for one run (commander keeps parsed values on the command objects). Errors make
 * `parseAsync` throw a CommanderError (exitOverride) instead of exiting the process.
 */
export function buildProgram(run: CommandRunner, output: ProgramOutput): Command {
  const program = new Command('gatehouse')
    .description(
      'Gatehouse admin command line: organizations, users, roles, session tokens, organization settings, resource servers, trusted issuers and OAuth clients.',
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

  addMemberCommands(program, run);
  addOrganizationSettingsCommands(program, run);
  addResourceServerCommands(program, run);
  addTrustedIssuerCommands(program, run);
  addOAuthClientCommands(program, run);

  // Every command and group, at any depth, names its own help after an error.
  const commandsAndGroups = [...program.commands];
  for (const command of commandsAndGroups) {
    commandsAndGroups.push(...command.commands);
    const name = command.parent === program ? command.name() : `${command.parent?.name()} ${command.name()}`;
    command.showHelpAfterError(`(run 'gatehouse ${name} --help' for its options)`);
  }
  return program;
}
