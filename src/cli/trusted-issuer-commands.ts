import { Command, Option } from 'commander';
import * as trustedIssuerCommands from '../federation/trusted-issuer.command';
import { ISSUER_KINDS, TOKEN_ENDPOINT_AUTH_METHODS } from '../federation/trusted-issuer.entity';
import {
  emailDomain,
  issuer,
  ORG,
  organizationName,
  role,
  ROLE_DESCRIPTION,
  token,
  trustedIssuerId,
} from './arguments';
import type { CommandRunner } from './commands';

/** `trusted-issuer add|list|set-origins|remove`: the identity providers an organization trusts. */
export function addTrustedIssuerCommands(program: Command, run: CommandRunner): void {
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
}
