import { InvalidArgumentError } from 'commander';
import { UUID } from '../common/uuid';
import { emailDomainOf } from '../federation/email-domains';
import { issuerShapeProblem } from '../federation/issuer-url';
import { MAX_KEY_LIFETIME_DAYS, MIN_KEY_LIFETIME_DAYS } from '../identity/organization.entity';
import { isEmailAddress } from '../identity/identity.service';
import { isRole, Role } from '../identity/roles';
import { audienceProblem } from '../resource-servers/audience';

/**
 * The admin command line's argument parsers, shared by its command groups: each option is checked and converted before
 * any command runs, so a typo writes nothing (docs/operations.md#admin-cli).
 */

const MAX_ORGANIZATION_NAME_LENGTH = 255;

export function organizationName(value: string): string {
  const name = value.trim();
  if (name === '' || [...name].length > MAX_ORGANIZATION_NAME_LENGTH) {
    throw new InvalidArgumentError(`--org must be 1 to ${MAX_ORGANIZATION_NAME_LENGTH} characters`);
  }
  return name;
}

export function email(value: string): string {
  if (!isEmailAddress(value)) throw new InvalidArgumentError('--email must be an email address');
  return value.trim();
}

export function audience(value: string): string {
  const problem = audienceProblem(value);
  if (problem !== null) throw new InvalidArgumentError(problem);
  return value;
}

export function serverName(value: string): string {
  const name = value.trim();
  if (name === '' || [...name].length > 255) throw new InvalidArgumentError('--name must be 1 to 255 characters');
  return name;
}

export function issuer(value: string): string {
  const problem = issuerShapeProblem(value);
  if (problem !== null) throw new InvalidArgumentError(`--issuer ${problem}`);
  return value;
}

/** A value without spaces or control characters (a client id, a client secret, an audience). */
export function token(flag: string, max: number): (value: string) => string {
  return (value) => {
    if (value.length === 0 || value.length > max || /[\s\p{Cc}]/u.test(value)) {
      throw new InvalidArgumentError(`${flag} must be 1 to ${max} characters, without spaces`);
    }
    return value;
  };
}

/** Repeatable: each --email-domain adds one, in lower case. */
export function emailDomain(value: string, previous: string[]): string[] {
  const domain = emailDomainOf(value);
  if (domain === null) throw new InvalidArgumentError('--email-domain must be a domain name, e.g. example.com');
  return [...previous, domain];
}

export function trustedIssuerId(value: string): string {
  const id = value.trim().toLowerCase();
  if (!UUID.test(id)) throw new InvalidArgumentError('--id must be a trusted issuer id (a UUID)');
  return id;
}

export function role(value: string): Role {
  if (!isRole(value)) throw new InvalidArgumentError('--role must be admin, member or viewer');
  return value;
}

/** A plain decimal integer within bounds (no sign, no exponent, no fraction). */
export function integer(flag: string, min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
      throw new InvalidArgumentError(`${flag} must be an integer from ${min} to ${max}`);
    }
    return Number(value);
  };
}

/** Days, or 'none' (a parser cannot return null: commander would store '' instead). */
export function keyLifetimeDays(value: string): number | 'none' {
  if (value === 'none') return value;
  if (!/^\d+$/.test(value) || Number(value) < MIN_KEY_LIFETIME_DAYS || Number(value) > MAX_KEY_LIFETIME_DAYS) {
    throw new InvalidArgumentError(
      `--max-key-lifetime-days must be an integer from ${MIN_KEY_LIFETIME_DAYS} to ${MAX_KEY_LIFETIME_DAYS}, or none`,
    );
  }
  return Number(value);
}

/** on or off, exactly (a boolean setting). */
export function onOff(flag: string): (value: string) => boolean {
  return (value) => {
    if (value !== 'on' && value !== 'off') throw new InvalidArgumentError(`${flag} must be on or off`);
    return value === 'on';
  };
}

export const ORG = ['--org <name>', 'organization name (1-255 characters)'] as const;
export const EMAIL_OPTION = ['--email <email>', "the user's e-mail address (stored in lower case)"] as const;
export const ROLE_DESCRIPTION = 'admin, member or viewer';
