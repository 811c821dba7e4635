import { Controller, Header, Param, Patch, Post } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { ApiErrors } from '../common/openapi';
import { ErrorCode } from '../common/errors';
import { UuidPipe, ValidBody } from '../common/validation.pipe';
import { ApiKeyUpdatesService } from './api-key-updates.service';
import { ApiKeysService } from './api-keys.service';
import { CreateApiKeyDto } from './dto/create-api-key.dto';
import { KeyRateLimitDto } from './dto/key-policies.dto';
import { RotateApiKeyDto } from './dto/rotate-api-key.dto';
import { UpdateApiKeyDto } from './dto/update-api-key.dto';
import type { KeyRateLimit } from './key-policies';
import { API_KEY_ROUTES } from './api-key-routes';
import { ApiKeyView, CreateApiKeyResponse, RotateApiKeyResponse } from './dto/api-key.view';

/** /v1/user-api-keys: creation, rotation and changes here; the list, read and revocation of every credential kind. */
@ApiTags('API keys')
@Controller('v1/user-api-keys')
export class ApiKeysController extends API_KEY_ROUTES.OwnerRoutes {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly updates: ApiKeyUpdatesService,
  ) {
    super();
  }

  @Post()
  @Authenticated({ permissions: ['api_keys:create'] })
  @ApiOperation({
    summary: 'Create a personal API key; the secret is returned once',
    description:
      'Optional scopes (each one the request itself must have, else 403) and expires_at (at least 60 s ahead, ' +
      "within the organization's key policy), allowed_cidrs and rate_limit. 400 FAILED_PRECONDITION past " +
      'API_KEY_MAX_ACTIVE_PER_USER usable keys.',
  })
  @ApiCreatedResponse({ type: CreateApiKeyResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.PAYLOAD_TOO_LARGE)
  @Header('Cache-Control', 'no-store')
  async create(
    @Caller() principal: Principal,
    @ValidBody() body: CreateApiKeyDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<CreateApiKeyResponse> {
    const { key, value } = await this.apiKeys.create(
      principal,
      {
        label: body.label ?? '',
        scopes: body.scopes,
        expiresAt: body.expires_at,
        allowedCidrs: body.allowed_cidrs,
        rateLimit: rateLimit(body.rate_limit),
      },
      request,
    );
    return { api_key: { ...ApiKeyView.from(key), value }, opaque_key: value };
  }

  @Post(':id/rotate')
  @Authenticated({ permissions: ['api_keys:create', 'api_keys:revoke'] })
  @ApiOperation({
    summary: 'Replace one of your keys by a new one with the same label and scopes; the new secret is returned once',
    description:
      'The old key is revoked at once (grace_period_seconds 0, the default) or keeps working until min(its ' +
      'expires_at, now + grace). 400 FAILED_PRECONDITION "api key is not active" for a revoked or expired key.',
  })
  @ApiBody({ type: RotateApiKeyDto, required: false })
  @ApiCreatedResponse({ type: RotateApiKeyResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND, ErrorCode.PAYLOAD_TOO_LARGE)
  @Header('Cache-Control', 'no-store')
  async rotate(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @ValidBody() body: RotateApiKeyDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<RotateApiKeyResponse> {
    const { key, value, previous } = await this.apiKeys.rotate(
      principal,
      id,
      { gracePeriodSeconds: body.grace_period_seconds ?? 0, expiresAt: body.expires_at },
      request,
    );
    return {
      api_key: { ...ApiKeyView.from(key), value },
      opaque_key: value,
      previous_api_key: ApiKeyView.from(previous),
    };
  }

  @Patch(':id')
  @Authenticated({ permissions: ['api_keys:create'] })
  @ApiOperation({
    summary: "Change one of your keys' label, allowlist (allowed_cidrs) or rate limit; absent fields stay as they are",
    description:
      'Audited as api_key.updated. 400 FAILED_PRECONDITION "api key is not active" for a revoked or expired key; an ' +
      'empty body changes and records nothing.',
  })
  @ApiOkResponse({ type: API_KEY_ROUTES.Response })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND, ErrorCode.PAYLOAD_TOO_LARGE)
  async update(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @ValidBody() body: UpdateApiKeyDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<{ api_key: ApiKeyView }> {
    const key = await this.updates.update(
      principal,
      id,
      { label: body.label, allowedCidrs: body.allowed_cidrs, rateLimit: rateLimit(body.rate_limit) },
      request,
    );
    return { api_key: ApiKeyView.from(key) };
  }
}

/** The body's `rate_limit`: absent stays absent, null stays null. */
function rateLimit(body: KeyRateLimitDto | null | undefined): KeyRateLimit | null | undefined {
  return body == null ? body : { requests: body.requests, windowSeconds: body.window_seconds };
}
