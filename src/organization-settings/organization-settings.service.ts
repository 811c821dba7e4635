import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { UnitOfWork } from '../database/unit-of-work';
import { IdentityService } from '../identity/identity.service';
import type { Organization, OrganizationSettings } from '../identity/organization.entity';

/** Who changes the settings: a member through the API, or nobody named (the admin CLI). */
export interface SettingsActor {
  userId: string;
  /** The key behind the caller's access token, if any. */
  credentialId?: string;
}

/**
 * The organization's settings (docs/api.md#organization-settings): the access-token lifetime and the
 * key policy. The organizations table is identity's; this module adds the audit trail around a change.
 */
@Injectable()
export class OrganizationSettingsService {
  constructor(
    private readonly identity: IdentityService,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
  ) {}

  get(organizationId: string): Promise<Organization> {
    return this.identity.organizationById(organizationId);
  }

  /**
   * Sets the given settings and records `organization.updated`, both in one transaction; returns the organization as
   * this change left it.
   */
  async update(
    organizationId: string,
    settings: OrganizationSettings,
    actor: SettingsActor | null,
    request?: RequestContext,
  ): Promise<Organization> {
    const given = Object.fromEntries(
      Object.entries(settings).filter(([, value]) => value !== undefined),
    ) as OrganizationSettings;
    if (Object.keys(given).length === 0) return this.get(organizationId);
    return this.unitOfWork.run(async (tx) => {
      const organization = await this.identity.updateSettings(organizationId, given, tx);
      await this.audit.record(
        {
          action: 'organization.updated',
          organizationId,
          actorUserId: actor?.userId ?? null,
          actorApiKeyId: actor?.credentialId ?? null,
          targetType: 'organization',
          targetId: organizationId,
          request,
        },
        tx,
      );
      return organization;
    });
  }
}
