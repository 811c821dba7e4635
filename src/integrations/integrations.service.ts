import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { AppError } from '../common/errors';
import { Page } from '../common/pagination';
import { Transaction, UnitOfWork } from '../database/unit-of-work';
import { CredentialCipher } from './credential-cipher';
import { CredentialsValidator } from './credentials-validator';
import { MonitoringCredentialsDto } from './dto/monitoring-credentials.dto';
import { CreateIntegrationDto, UpdateIntegrationDto } from './dto/integration-body.dto';
import { NotificationIntegration } from './integration.entity';
import { IntegrationsRepository } from './integrations.repository';
import type { MonitoringCredentials } from './monitoring-provider.port';
import type { ValidationOutcome } from './validation-outcome';

/** Who is acting: integrations belong to the organization, not to one user (docs/api.md#notification-integration-object). */
export interface IntegrationActor {
  userId: string;
  organizationId: string;
  credentialId?: string;
}

const API_KEY = 'api_key';
const APPLICATION_KEY = 'application_key';

const last4 = (value: string): string => value.slice(-4);

@Injectable()
export class IntegrationsService {
  constructor(
    private readonly integrations: IntegrationsRepository,
    private readonly validator: CredentialsValidator,
    private readonly cipher: CredentialCipher,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
  ) {}

  /** Nothing is stored (docs/api.md#post-v1notification-integrationsmonitoringvalidate). */
  validate(actor: IntegrationActor, config: MonitoringCredentialsDto): Promise<ValidationOutcome> {
    return this.validator.validate(actor.organizationId, toCredentials(config));
  }

  /** A blocked save throws before anything is written (docs/api.md#post-v1notification-integrations). */
  async create(
    actor: IntegrationActor,
    body: CreateIntegrationDto,
    request?: RequestContext,
  ): Promise<NotificationIntegration> {
    const credentials = toCredentials(body.config);
    const validation = await this.validator.validateForSave(actor.organizationId, credentials);
    const now = new Date();
    const integration = Object.assign(new NotificationIntegration(), {
      id: randomUUID(),
      organizationId: actor.organizationId,
      createdBy: actor.userId,
      type: body.type,
      name: body.name,
      validation,
      createdAt: now,
      updatedAt: now,
    });
    this.seal(integration, credentials);
    await this.unitOfWork.run(async (tx) => {
      await this.integrations.insert(integration, tx);
      await this.record('integration.created', actor, integration.id, request, tx);
    });
    return integration;
  }

  async list(actor: IntegrationActor, query: { page: number; limit: number }): Promise<Page<NotificationIntegration>> {
    const [items, totalCount] = await this.integrations.findPage(
      actor.organizationId,
      (query.page - 1) * query.limit,
      query.limit,
    );
    return { items, page: query.page, limit: query.limit, totalCount };
  }

  /** Another organization's id is "not found" (docs/api.md). */
  async get(actor: IntegrationActor, id: string): Promise<NotificationIntegration> {
    const integration = await this.integrations.findOne(actor.organizationId, id);
    if (integration === null) throw new AppError('integration_not_found');
    return integration;
  }

  /**
   * Validated like a create before writing; a blocked update changes nothing
   * (docs/api.md#patch-v1notification-integrationsid).
   */
  async update(
    actor: IntegrationActor,
    id: string,
    body: UpdateIntegrationDto,
    request?: RequestContext,
  ): Promise<NotificationIntegration> {
    const integration = await this.get(actor, id);
    const stored = this.open(integration);
    const merged: MonitoringCredentials = {
      apiKey: body.config?.api_key ?? stored.apiKey,
      applicationKey: body.config?.application_key ?? stored.applicationKey,
      site: body.config?.site ?? stored.site,
    };
    const validation = await this.validator.validateForSave(actor.organizationId, merged);
    const changed = Object.assign(new NotificationIntegration(), {
      ...integration,
      name: body.name ?? integration.name,
      validation,
      updatedAt: new Date(),
    });
    this.seal(changed, merged);
    const updated = await this.unitOfWork.run(async (tx) => {
      const found = await this.integrations.update(
        actor.organizationId,
        id,
        {
          name: changed.name,
          site: changed.site,
          apiKeyLast4: changed.apiKeyLast4,
          applicationKeyLast4: changed.applicationKeyLast4,
          apiKeyEncrypted: changed.apiKeyEncrypted,
          applicationKeyEncrypted: changed.applicationKeyEncrypted,
          validation: changed.validation,
          updatedAt: changed.updatedAt,
        },
        tx,
      );
      if (found) await this.record('integration.updated', actor, id, request, tx);
      return found;
    });
    // Deleted while we were asking the provider.
    if (!updated) throw new AppError('integration_not_found');
    return changed;
  }

  async remove(actor: IntegrationActor, id: string, request?: RequestContext): Promise<NotificationIntegration> {
    const integration = await this.get(actor, id);
    const deleted = await this.unitOfWork.run(async (tx) => {
      const found = await this.integrations.delete(actor.organizationId, id, tx);
      if (found) await this.record('integration.deleted', actor, id, request, tx);
      return found;
    });
    if (!deleted) throw new AppError('integration_not_found');
    return integration;
  }

  private record(
    action: 'integration.created' | 'integration.updated' | 'integration.deleted',
    actor: IntegrationActor,
    id: string,
    request: RequestContext | undefined,
    tx: Transaction,
  ): Promise<void> {
    return this.audit.record(
      {
        action,
        organizationId: actor.organizationId,
        actorUserId: actor.userId,
        actorApiKeyId: actor.credentialId,
        targetType: 'notification_integration',
        targetId: id,
        request,
      },
      tx,
    );
  }

  private seal(integration: NotificationIntegration, credentials: MonitoringCredentials): void {
    integration.site = credentials.site;
    integration.apiKeyLast4 = last4(credentials.apiKey);
    integration.applicationKeyLast4 = last4(credentials.applicationKey);
    integration.apiKeyEncrypted = this.cipher.encrypt(credentials.apiKey, integration.id, API_KEY);
    integration.applicationKeyEncrypted = this.cipher.encrypt(
      credentials.applicationKey,
      integration.id,
      APPLICATION_KEY,
    );
  }

  private open(integration: NotificationIntegration): MonitoringCredentials {
    return {
      apiKey: this.cipher.decrypt(integration.apiKeyEncrypted, integration.id, API_KEY),
      applicationKey: this.cipher.decrypt(integration.applicationKeyEncrypted, integration.id, APPLICATION_KEY),
      site: integration.site,
    };
  }
}

function toCredentials(config: MonitoringCredentialsDto): MonitoringCredentials {
  return { apiKey: config.api_key, applicationKey: config.application_key, site: config.site };
}
