import { PageMetaView } from '../../common/pagination';
import { ApiProperty } from '@nestjs/swagger';
import type { IntegrationType, NotificationIntegration } from '../integration.entity';
import { MONITORING_SITES, type MonitoringSite } from '../monitoring-sites';
import type { KeysStatus, PermissionResult, PermissionStatus, ValidationOutcome } from '../validation-outcome';

const PERMISSION_STATUSES: PermissionStatus[] = ['Granted', 'Missing', 'Unknown'];

/** One entry of `validation.permissions` (docs/api.md#notification-integration-object). */
export class PermissionResultView implements PermissionResult {
  @ApiProperty({ example: 'logs_read_config' })
  name: string;
  @ApiProperty()
  required: boolean;
  @ApiProperty({ enum: PERMISSION_STATUSES })
  status: PermissionStatus;
}

/** The validation outcome (docs/api.md#validation-outcome, docs/api.md#notification-integration-object). */
export class ValidationOutcomeView implements ValidationOutcome {
  @ApiProperty({ enum: ['Working', 'Invalid'] })
  keys_status: KeysStatus;
  @ApiProperty({ enum: PERMISSION_STATUSES })
  required_permissions_status: PermissionStatus;
  @ApiProperty()
  can_save: boolean;
  @ApiProperty({ type: [PermissionResultView], description: 'The fourteen checks, in catalogue order' })
  permissions: PermissionResultView[];
  @ApiProperty({ format: 'date-time' })
  checked_at: string;
}

export class IntegrationConfigView {
  @ApiProperty({ enum: MONITORING_SITES })
  site: MonitoringSite;
  @ApiProperty({ description: 'Last four characters of the API key; the key itself is never returned' })
  api_key_last4: string;
  @ApiProperty({ description: 'Last four characters of the application key' })
  application_key_last4: string;
}

/** INTEGRATION of docs/api.md#notification-integration-object: the keys only by their last four characters. */
export class IntegrationView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ format: 'uuid' })
  organization_id: string;
  @ApiProperty({ enum: ['monitoring'] })
  type: IntegrationType;
  @ApiProperty()
  name: string;
  @ApiProperty({ format: 'uuid', description: 'The user who created it' })
  created_by: string;
  @ApiProperty({ format: 'date-time' })
  created_at: string;
  @ApiProperty({ format: 'date-time' })
  updated_at: string;
  @ApiProperty({ type: IntegrationConfigView })
  config: IntegrationConfigView;
  @ApiProperty({ type: ValidationOutcomeView, description: 'The outcome of the last successful save' })
  validation: ValidationOutcomeView;

  static from(integration: NotificationIntegration): IntegrationView {
    return {
      id: integration.id,
      organization_id: integration.organizationId,
      type: integration.type,
      name: integration.name,
      created_by: integration.createdBy,
      created_at: integration.createdAt.toISOString(),
      updated_at: integration.updatedAt.toISOString(),
      config: {
        site: integration.site,
        api_key_last4: integration.apiKeyLast4,
        application_key_last4: integration.applicationKeyLast4,
      },
      validation: integration.validation,
    };
  }
}

export class IntegrationResponse {
  @ApiProperty({ type: IntegrationView })
  notification_integration: IntegrationView;
}

export class IntegrationListResponse extends PageMetaView {
  @ApiProperty({ type: [IntegrationView] })
  notification_integrations: IntegrationView[];
}

export class ValidationResponse {
  @ApiProperty({ type: ValidationOutcomeView })
  validation: ValidationOutcomeView;
}
