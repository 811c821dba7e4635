/**
 * The console's names for the API's types, all from the generated document (client/schema.d.ts,
 * `npm run client:generate`): the compiler checks every page against the API as the server
 * describes it (docs/adr/0022-typed-client.md).
 */
import type { components } from '../../../client';

type Schemas = components['schemas'];

/** The permission catalogue, in catalogue order (docs/api.md#roles-and-permissions). */
export type Permission = Schemas['ConsoleSessionResponse']['permissions'][number];
export type ApiKeyStatus = Schemas['ApiKeyView']['status'];
/** An API key record (no secret), with where it was last used from. */
export type ApiKey = Schemas['ApiKeyView'];
export type CreatedApiKey = Schemas['CreateApiKeyResponse'];
export type RotatedApiKey = Schemas['RotateApiKeyResponse'];
export type AuditEvent = Schemas['AuditEventView'];
export type AuditAction = AuditEvent['action'];
export type OrganizationSettings = Schemas['OrganizationView'];
/** A credential's counts over time (docs/api.md#usage-over-time). */
export type Usage = Schemas['UsageView'];
export type UsageBucket = Schemas['UsageBucketView'];
export type UsageChannels = Schemas['UsageByChannelView'];
export type Granularity = Usage['granularity'];
/** One of the organization's busiest credentials. */
export type BusyCredential = Schemas['BusyCredentialView'];
/** Who revoked a credential and why (docs/api.md#who-revoked-a-credential). */
export type RevokedBy = Schemas['RevokedByView'];
