import { Entity, PrimaryColumn, Column } from 'typeorm';
import { TimestampColumn } from '../database/columns';

export const DEFAULT_ACCESS_TOKEN_LIFETIME = 1800;
export const MIN_ACCESS_TOKEN_LIFETIME = 60;
export const MAX_ACCESS_TOKEN_LIFETIME = 86400;
/** Bounds of the organization's key policy, max_key_lifetime_days (docs/api.md#organization-settings). */
export const MIN_KEY_LIFETIME_DAYS = 1;
export const MAX_KEY_LIFETIME_DAYS = 3650;

@Entity({ name: 'organizations' })
export class Organization {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ name: 'access_token_lifetime', type: 'integer' })
  accessTokenLifetime: number;

  /** The longest lifetime of a key created in the organization, in days; null: no limit. */
  @Column({ name: 'max_key_lifetime_days', type: 'integer', nullable: true })
  maxKeyLifetimeDays: number | null;

  /** Whether keys created from now on must carry an allowlist that does not allow every address (docs/api.md#allowlists-and-rate-limits). */
  @Column({ name: 'require_key_allowlist', type: 'integer', transformer: { to: Number, from: Boolean } })
  requireKeyAllowlist: boolean;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'updated_at' })
  updatedAt: Date;
}

/** The settings an organization's admins may change (docs/api.md#organization-settings); absent: unchanged. */
export type OrganizationSettings = Partial<
  Pick<Organization, 'accessTokenLifetime' | 'maxKeyLifetimeDays' | 'requireKeyAllowlist'>
>;
