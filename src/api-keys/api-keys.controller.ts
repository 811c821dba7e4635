import { Body, Controller, Delete, Get, Header, Param, Post, Query } from '@nestjs/common';
import { CurrentPrincipal, RequirePermissions } from '../auth/auth.decorators';
import type { Principal } from '../auth/principal';
import { UuidPipe } from '../common/validation.pipe';
import { ApiKeysService } from './api-keys.service';
import { CreateApiKeyDto } from './dto/create-api-key.dto';
import { ListApiKeysQuery } from './dto/list-api-keys.query';
import { ApiKeyListResponse, ApiKeyResponse, ApiKeyView, CreateApiKeyResponse } from './dto/api-key.view';

@Controller('v1/user-api-keys')
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @Post()
  @RequirePermissions('api_keys:create')
  @Header('Cache-Control', 'no-store')
  async create(@CurrentPrincipal() principal: Principal, @Body() body: CreateApiKeyDto): Promise<CreateApiKeyResponse> {
    const { key, value } = await this.apiKeys.create(principal, body.label ?? '');
    return { api_key: { ...ApiKeyView.from(key), value }, opaque_key: value };
  }

  @Get()
  @RequirePermissions('api_keys:read')
  async list(@CurrentPrincipal() principal: Principal, @Query() query: ListApiKeysQuery): Promise<ApiKeyListResponse> {
    const page = await this.apiKeys.list(principal, {
      page: query.page,
      limit: query.limit,
      includeRevoked: query.include_revoked,
    });
    return {
      api_keys: page.items.map(ApiKeyView.from),
      page: page.page,
      limit: page.limit,
      total_count: page.totalCount,
    };
  }

  @Get(':id')
  @RequirePermissions('api_keys:read')
  async get(@CurrentPrincipal() principal: Principal, @Param('id', UuidPipe) id: string): Promise<ApiKeyResponse> {
    return { api_key: ApiKeyView.from(await this.apiKeys.get(principal, id)) };
  }

  @Delete(':id')
  @RequirePermissions('api_keys:revoke')
  async revoke(@CurrentPrincipal() principal: Principal, @Param('id', UuidPipe) id: string): Promise<ApiKeyResponse> {
    return { api_key: ApiKeyView.from(await this.apiKeys.revoke(principal, id)) };
  }
}
