/**
 * The console's names for the members' and single sign-on's types (docs/api.md#members,
 * docs/api.md#single-sign-on-set-up), from the generated document like the others (api/contract.ts).
 */
import type { components } from '../../../client';

type Schemas = components['schemas'];

export type Member = Schemas['MemberView'];
export type Role = Member['role'];
export type Invitation = Schemas['InvitationView'];
/** A new invitation: the only answer that carries its link. */
export type CreatedInvitation = Schemas['CreatedInvitationView'];
export type SingleSignOn = Schemas['SingleSignOnView'];
export type Discovery = Schemas['DiscoveryView'];
export type TokenEndpointAuth = SingleSignOn['token_endpoint_auth'];

/** The roles, with what each may do in a sentence (docs/api.md#roles-and-permissions). */
export const ROLES: ReadonlyArray<{ name: Role; description: string }> = [
  { name: 'admin', description: 'everything, members and settings included' },
  { name: 'member', description: 'their own keys and workload identities' },
  { name: 'viewer', description: 'reads and revokes their own keys' },
];
