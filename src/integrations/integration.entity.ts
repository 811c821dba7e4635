import { Column, Entity, PrimaryColumn, ValueTransformer } from 'typeorm';
import { TimestampColumn } from '../database/columns';
import type { MonitoringSite } from './monitoring-sites';
import type { ValidationOutcome } from './validation-outcome';

export type IntegrationType = 'monitoring';

/** Text on both databases, so the stored outcome reads back exactly as it was returned. */
const jsonText: ValueTransformer = {
  to: (value: unknown) => (value === undefined ? undefined : JSON.stringify(value)),
  from: (value: string | null) => (value === null ? null : (JSON.parse(value) as unknown)),
};

/** A notification integration (docs/api.md#notification-integration-object). */
@Entity({ name: 'notification_integrations' })
export class NotificationIntegration {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  /** The user who created it. */
  @Column({ name: 'created_by', type: 'varchar', length: 36 })
  createdBy: string;

  @Column({ type: 'varchar', length: 32 })
  type: IntegrationType;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ type: 'varchar', length: 64 })
  site: MonitoringSite;

  @Column({ name: 'api_key_last4', type: 'varchar', length: 4 })
  apiKeyLast4: string;

  @Column({ name: 'application_key_last4', type: 'varchar', length: 4 })
  applicationKeyLast4: string;

  /** `v1:<key id>:<iv>:<ciphertext>:<tag>` (credential-cipher.ts). */
  @Column({ name: 'api_key_encrypted', type: 'text' })
  apiKeyEncrypted: string;

  @Column({ name: 'application_key_encrypted', type: 'text' })
  applicationKeyEncrypted: string;

  /** The validation outcome of the last successful save. */
  @Column({ type: 'text', transformer: jsonText })
  validation: ValidationOutcome;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  @TimestampColumn({ name: 'updated_at' })
  updatedAt: Date;
}
