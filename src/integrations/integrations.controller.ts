import { Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { Authenticated, Caller } from '../identity/access.decorators';
import { ApiErrors } from '../common/openapi';
import { ErrorCode } from '../common/errors';
import type { Principal } from '../identity/principal';
import { PageMetaView, PageQueryDto } from '../common/pagination';
import { UuidPipe, ValidBody, ValidQuery } from '../common/validation.pipe';
import { CreateIntegrationDto, UpdateIntegrationDto } from './dto/integration-body.dto';
import {
  IntegrationListResponse,
  IntegrationResponse,
  IntegrationView,
  ValidationResponse,
} from './dto/integration.view';
import { MonitoringCredentialsDto } from './dto/monitoring-credentials.dto';
import { IntegrationsService } from './integrations.service';

/** docs/api.md#notification-integration-object; roles per docs/api.md (read: integrations:read, else integrations:write). */
@ApiTags('Notification integrations')
@Controller('v1/notification-integrations')
export class IntegrationsController {
  constructor(private readonly integrations: IntegrationsService) {}

  @Post('monitoring/validate')
  @HttpCode(200)
  @Authenticated({ permissions: ['integrations:write'] })
  @ApiOperation({ summary: 'Validate monitoring-provider keys and report every permission check; stores nothing' })
  @ApiOkResponse({ type: ValidationResponse, description: 'Also when the keys are invalid' })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.PAYLOAD_TOO_LARGE, ErrorCode.RESOURCE_EXHAUSTED)
  async validate(
    @Caller() principal: Principal,
    @ValidBody() body: MonitoringCredentialsDto,
  ): Promise<ValidationResponse> {
    return { validation: await this.integrations.validate(principal, body) };
  }

  @Post()
  @Authenticated({ permissions: ['integrations:write'] })
  @ApiOperation({
    summary: 'Create a notification integration; validated first, nothing stored when blocked',
    description:
      '400 FAILED_PRECONDITION (with `validation`) when the keys are invalid or a required permission is ' +
      'missing; 503 UNAVAILABLE when the provider cannot answer.',
  })
  @ApiCreatedResponse({ type: IntegrationResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.PAYLOAD_TOO_LARGE, ErrorCode.RESOURCE_EXHAUSTED)
  async create(
    @Caller() principal: Principal,
    @ValidBody() body: CreateIntegrationDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<IntegrationResponse> {
    return { notification_integration: IntegrationView.from(await this.integrations.create(principal, body, request)) };
  }

  @Get()
  @Authenticated({ permissions: ['integrations:read'] })
  @ApiOperation({ summary: "List the organization's integrations, newest first" })
  @ApiOkResponse({ type: IntegrationListResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT)
  async list(@Caller() principal: Principal, @ValidQuery() query: PageQueryDto): Promise<IntegrationListResponse> {
    const page = await this.integrations.list(principal, query);
    return { notification_integrations: page.items.map(IntegrationView.from), ...PageMetaView.of(page) };
  }

  @Get(':id')
  @Authenticated({ permissions: ['integrations:read'] })
  @ApiOperation({ summary: 'Read one integration (keys shown by their last four characters only)' })
  @ApiOkResponse({ type: IntegrationResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async get(@Caller() principal: Principal, @Param('id', UuidPipe) id: string): Promise<IntegrationResponse> {
    return { notification_integration: IntegrationView.from(await this.integrations.get(principal, id)) };
  }

  @Patch(':id')
  @Authenticated({ permissions: ['integrations:write'] })
  @ApiOperation({
    summary: 'Update an integration; the merged configuration is validated again before anything is written',
  })
  @ApiOkResponse({ type: IntegrationResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND, ErrorCode.PAYLOAD_TOO_LARGE, ErrorCode.RESOURCE_EXHAUSTED)
  async update(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @ValidBody() body: UpdateIntegrationDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<IntegrationResponse> {
    return {
      notification_integration: IntegrationView.from(await this.integrations.update(principal, id, body, request)),
    };
  }

  @Delete(':id')
  @Authenticated({ permissions: ['integrations:write'] })
  @ApiOperation({ summary: 'Delete an integration' })
  @ApiOkResponse({ type: IntegrationResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async remove(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<IntegrationResponse> {
    return { notification_integration: IntegrationView.from(await this.integrations.remove(principal, id, request)) };
  }
}
