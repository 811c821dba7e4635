import { Body, Controller, Delete, Get, Header, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { CurrentPrincipal, RequirePermissions } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { ApiErrors } from '../common/openapi';
import { PageMetaView } from '../common/pagination';
import { UuidPipe } from '../common/validation.pipe';
import { ApiKeysService } from './api-keys.service';
import { CreateApiKeyDto } from './dto/create-api-key.dto';
import { ListApiKeysQuery } from './dto/list-api-keys.query';
import { ApiKeyListResponse, ApiKeyResponse, ApiKeyView, CreateApiKeyResponse } from './dto/api-key.view';

@ApiTags('API keys')
@Controller('v1/user-api-keys')
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Post()
  @RequirePermissions('api_keys:create')
  @ApiOperation({ summary: 'Create a personal API key; the secret is returned once' })
  @ApiCreatedResponse({ type: CreateApiKeyResponse })
  @ApiErrors(400, 413)
  @Header('Cache-Control', 'no-store')
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body() body: CreateApiKeyDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<CreateApiKeyResponse> {
    const { key, value } = await this.apiKeys.create(principal, body.label ?? '', request);
    return { api_key: { ...ApiKeyView.from(key), value }, opaque_key: value };
  }

  @Get()
  @RequirePermissions('api_keys:read')
  @ApiOperation({ summary: "List the caller's keys, newest first" })
  @ApiOkResponse({ type: ApiKeyListResponse })
  @ApiErrors(400)
  async list(@CurrentPrincipal() principal: Principal, @Query() query: ListApiKeysQuery): Promise<ApiKeyListResponse> {
    const page = await this.apiKeys.list(principal, {
      page: query.page,
      limit: query.limit,
      includeRevoked: query.include_revoked,
    });
    return { api_keys: page.items.map(ApiKeyView.from), ...PageMetaView.of(page) };
  }

  @Get(':id')
  @RequirePermissions('api_keys:read')
  @ApiOperation({ summary: "Read one of the caller's keys (without its secret)" })
  @ApiOkResponse({ type: ApiKeyResponse })
  @ApiErrors(400, 404)
  async get(@CurrentPrincipal() principal: Principal, @Param('id', UuidPipe) id: string): Promise<ApiKeyResponse> {
    return { api_key: ApiKeyView.from(await this.apiKeys.get(principal, id)) };
  }

  @Delete(':id')
  @RequirePermissions('api_keys:revoke')
  @ApiOperation({ summary: 'Revoke a key at once and for good (idempotent)' })
  @ApiOkResponse({ type: ApiKeyResponse })
  @ApiErrors(400, 404)
  async revoke(
    @CurrentPrincipal() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<ApiKeyResponse> {
    return { api_key: ApiKeyView.from(await this.apiKeys.revoke(principal, id, request)) };
  }
}
