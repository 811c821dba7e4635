import type { Command } from 'commander';
import {
  MAX_ACCESS_TOKEN_LIFETIME,
  MAX_KEY_LIFETIME_DAYS,
  MIN_ACCESS_TOKEN_LIFETIME,
  MIN_KEY_LIFETIME_DAYS,
} from '../identity/organization.entity';
import { integer, keyLifetimeDays, onOff, ORG, organizationName } from './arguments';
import * as commands from './commands';

/** An organization's settings: the key policy, the access tokens' lifetime, the allowlist policy. */
export function addOrganizationSettingsCommands(program: Command, run: commands.CommandRunner): void {
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
}
