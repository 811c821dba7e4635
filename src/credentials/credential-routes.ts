import { Controller, Delete, Get, Inject, Param, Type } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { ErrorCode } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { PageMetaView } from '../common/pagination';
import { UuidPipe, ValidQuery } from '../common/validation.pipe';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import type { Permission } from '../identity/roles';
import type { Credential } from './credential.entity';
import { CredentialsRepository } from './credentials.repository';
import { CredentialsService, Revoker, WithOwnerEmails } from './credentials.service';
import { CredentialUsageService } from './credential-usage.service';
import { CredentialView } from './dto/credential.view';
import { ListCredentialsQuery, ListOrganizationCredentialsQuery } from './dto/list-credentials.query';
import { RevokedByResponse, RevokedByView } from './dto/revoked-by.view';
import { UsageQuery, UsageResponse } from './dto/usage.dto';

type Summary = { summary: string; description?: string };

/** How one kind's routes are named and shown (docs/adr/0052-one-credential-core.md#a-new-kind). */
export interface CredentialRoutesOf<T extends Credential, V extends CredentialView> {
  /** The stem of its OpenAPI schemas' names: `ApiKey` gives ApiKeyResponse, OrganizationApiKeyView... */
  schema: string;
  tag: string;
  /** The kind's store, as its module provides it. */
  store: Type<CredentialsRepository<T>>;
  view: Type<V> & { from(credential: T): V };
  /** The body's key of one credential (`api_key`) and of a list (`api_keys`). */
  one: string;
  many: string;
  permissions: { read: Permission; revoke: Permission; manage: Permission };
  owner: { list: Summary; get: Summary; revoke: Summary; usage: Summary };
  organization: { path: string; controller: string; list: Summary; revoke: Summary; usage: Summary };
}

/** A class under the name the OpenAPI document shows (schemas and operation ids are named after classes). */
function named<C extends Type>(name: string, type: C): C {
  Object.defineProperty(type, 'name', { value: name });
  return type;
}

/**
 * The routes every kind has, from its description: the owner's list, read, revocation and usage over time (a base class
 * its controller extends and adds its own routes to), the organization's list, revocation and usage for admins (a
 * controller), and their response schemas. Each handler is one call of CredentialsService or CredentialUsageService.
 */
export function credentialRoutes<T extends Credential, V extends CredentialView>(routes: CredentialRoutesOf<T, V>) {
  const View: Type<CredentialView> = routes.view;
  const property = (type: Type, key: string, options: Parameters<typeof ApiProperty>[0]): void =>
    ApiProperty(options)(type.prototype as object, key);

  const Response = named(`${routes.schema}Response`, class {});
  property(Response, routes.one, { type: () => View });
  const ListResponse = named(`${routes.schema}ListResponse`, class extends PageMetaView {});
  property(ListResponse, routes.many, { type: () => [View] });
  const OrganizationView = named(`Organization${routes.schema}View`, class extends View {});
  property(OrganizationView, 'owner_email', {
    nullable: true,
    type: String,
    description: "The owner's e-mail address",
    example: 'dev@acme.test',
  });
  const OrganizationResponse = named(`Organization${routes.schema}Response`, class {});
  property(OrganizationResponse, routes.one, { type: () => OrganizationView });
  const OrganizationListResponse = named(`Organization${routes.schema}ListResponse`, class extends PageMetaView {});
  property(OrganizationListResponse, routes.many, { type: () => [OrganizationView] });

  property(OrganizationView, 'revoked_by', {
    type: () => RevokedByView,
    nullable: true,
    description:
      'Who revoked it and why, as GET …/{id}/revoked-by says; null while it is active, or when its audit entry is past retention',
  });

  const withOwner = (credential: T, { emails, revokers }: WithOwnerEmails) => {
    const revoker = revokers.get(credential.id);
    return {
      ...routes.view.from(credential),
      owner_email: emails.get(credential.userId) ?? null,
      revoked_by: revoker === undefined ? null : RevokedByView.from(revoker),
    };
  };

  /** The owner's routes: the kind's controller extends this class. */
  abstract class OwnerRoutes {
    @Inject(CredentialsService) protected readonly credentials: CredentialsService;
    @Inject(routes.store) protected readonly store: CredentialsRepository<T>;
    @Inject(CredentialUsageService) protected readonly usageOverTime: CredentialUsageService;

    @Get()
    @Authenticated({ permissions: [routes.permissions.read] })
    @ApiOperation(routes.owner.list)
    @ApiOkResponse({ type: ListResponse })
    @ApiErrors(ErrorCode.INVALID_ARGUMENT)
    async list(
      @Caller() principal: Principal,
      @ValidQuery() query: ListCredentialsQuery,
    ): Promise<Record<string, unknown>> {
      const window = { page: query.page, limit: query.limit, includeRevoked: query.include_revoked };
      const page = await this.credentials.list(this.store, principal, window);
      return { [routes.many]: page.items.map((credential) => routes.view.from(credential)), ...PageMetaView.of(page) };
    }

    @Get(':id')
    @Authenticated({ permissions: [routes.permissions.read] })
    @ApiOperation(routes.owner.get)
    @ApiOkResponse({ type: Response })
    @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
    async get(@Caller() principal: Principal, @Param('id', UuidPipe) id: string): Promise<Record<string, unknown>> {
      return { [routes.one]: routes.view.from(await this.credentials.get(this.store, principal, id)) };
    }

    @Get(':id/usage')
    @Authenticated({ permissions: [routes.permissions.read] })
    @ApiOperation(routes.owner.usage)
    @ApiOkResponse({ type: UsageResponse })
    @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
    async usage(
      @Caller() principal: Principal,
      @Param('id', UuidPipe) id: string,
      @ValidQuery() query: UsageQuery,
    ): Promise<UsageResponse> {
      return { usage: await this.usageOverTime.series(this.store, principal, id, query) };
    }

    @Get(':id/revoked-by')
    @Authenticated({ permissions: [routes.permissions.read] })
    @ApiOperation({
      summary: `Who revoked one of the caller's ${routes.tag.toLowerCase()}, and why (null while it is not revoked)`,
      description: "From its revocation's audit entry (docs/api.md#who-revoked-a-credential).",
    })
    @ApiOkResponse({ type: RevokedByResponse })
    @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
    async revokedBy(@Caller() principal: Principal, @Param('id', UuidPipe) id: string): Promise<RevokedByResponse> {
      const credential = await this.credentials.get(this.store, principal, id);
      return revokedByResponse(await this.credentials.revokedBy(credential, this.store.kind));
    }

    @Delete(':id')
    @Authenticated({ permissions: [routes.permissions.revoke] })
    @ApiOperation(routes.owner.revoke)
    @ApiOkResponse({ type: Response })
    @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
    async revoke(
      @Caller() principal: Principal,
      @Param('id', UuidPipe) id: string,
      @CurrentRequestContext() request: RequestContext,
    ): Promise<Record<string, unknown>> {
      return { [routes.one]: routes.view.from(await this.credentials.revoke(this.store, principal, id, request)) };
    }
  }

  @ApiTags(routes.tag)
  @Controller(routes.organization.path)
  class OrganizationController {
    constructor(
      private readonly credentials: CredentialsService,
      private readonly usageOverTime: CredentialUsageService,
      @Inject(routes.store) private readonly store: CredentialsRepository<T>,
    ) {}

    @Get()
    @Authenticated({ permissions: [routes.permissions.manage] })
    @ApiOperation(routes.organization.list)
    @ApiOkResponse({ type: OrganizationListResponse })
    @ApiErrors(ErrorCode.INVALID_ARGUMENT)
    async list(
      @Caller() principal: Principal,
      @ValidQuery() query: ListOrganizationCredentialsQuery,
    ): Promise<Record<string, unknown>> {
      const { page, ...annotations } = await this.credentials.listInOrganization(this.store, principal, {
        userId: query.user_id,
        email: query.email,
        page: query.page,
        limit: query.limit,
        includeRevoked: query.include_revoked,
      });
      const items = page.items.map((credential) => withOwner(credential, annotations));
      return { [routes.many]: items, ...PageMetaView.of(page) };
    }

    @Get(':id')
    @Authenticated({ permissions: [routes.permissions.manage] })
    @ApiOperation({
      summary: `Read any of the ${routes.tag.toLowerCase()} of the caller's organization, with its owner's e-mail`,
      description: "Another organization's is 404.",
    })
    @ApiOkResponse({ type: OrganizationResponse })
    @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
    async get(@Caller() principal: Principal, @Param('id', UuidPipe) id: string): Promise<Record<string, unknown>> {
      const { credential, ...annotations } = await this.credentials.getInOrganization(this.store, principal, id);
      return { [routes.one]: withOwner(credential, annotations) };
    }

    @Get(':id/revoked-by')
    @Authenticated({ permissions: [routes.permissions.manage] })
    @ApiOperation({
      summary: `Who revoked any of the ${routes.tag.toLowerCase()} of the caller's organization, and why`,
      description: "As the owner's route (docs/api.md#who-revoked-a-credential). Another organization's is 404.",
    })
    @ApiOkResponse({ type: RevokedByResponse })
    @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
    async revokedBy(@Caller() principal: Principal, @Param('id', UuidPipe) id: string): Promise<RevokedByResponse> {
      const { credential } = await this.credentials.getInOrganization(this.store, principal, id);
      return revokedByResponse(await this.credentials.revokedBy(credential, this.store.kind));
    }

    @Delete(':id')
    @Authenticated({ permissions: [routes.permissions.manage] })
    @ApiOperation(routes.organization.revoke)
    @ApiOkResponse({ type: OrganizationResponse })
    @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
    async revoke(
      @Caller() principal: Principal,
      @Param('id', UuidPipe) id: string,
      @CurrentRequestContext() request: RequestContext,
    ): Promise<Record<string, unknown>> {
      const { credential, ...annotations } = await this.credentials.revokeInOrganization(
        this.store,
        principal,
        id,
        request,
      );
      return { [routes.one]: withOwner(credential, annotations) };
    }

    @Get(':id/usage')
    @Authenticated({ permissions: [routes.permissions.manage] })
    @ApiOperation(routes.organization.usage)
    @ApiOkResponse({ type: UsageResponse })
    @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
    async usage(
      @Caller() principal: Principal,
      @Param('id', UuidPipe) id: string,
      @ValidQuery() query: UsageQuery,
    ): Promise<UsageResponse> {
      return { usage: await this.usageOverTime.seriesInOrganization(this.store, principal, id, query) };
    }
  }

  return {
    OwnerRoutes,
    OrganizationController: named(routes.organization.controller, OrganizationController),
    Response,
    ListResponse,
    OrganizationView,
    OrganizationResponse,
    OrganizationListResponse,
  };
}

function revokedByResponse(revoker: Revoker | null): RevokedByResponse {
  return { revoked_by: revoker === null ? null : RevokedByView.from(revoker) };
}
