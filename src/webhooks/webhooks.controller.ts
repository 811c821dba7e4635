import { Controller, Delete, Get, Header, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { ErrorCode } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { PageMetaView, PageQueryDto } from '../common/pagination';
import { UuidPipe, ValidBody, ValidQuery } from '../common/validation.pipe';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { CreateWebhookDto } from './dto/create-webhook.dto';
import { RotateWebhookSecretDto } from './dto/rotate-webhook-secret.dto';
import {
  CreateWebhookResponse,
  DeliveryDetailResponse,
  DeliveryDetailView,
  DeliveryListResponse,
  DeliveryResponse,
  DeliveryView,
  RotateWebhookSecretResponse,
  WebhookListResponse,
  WebhookResponse,
  WebhookView,
} from './dto/webhook.view';
import { WebhooksService } from './webhooks.service';

/** Signed webhooks (docs/webhooks.md#managing-endpoints): an organization's endpoints, for the admins of its keys. */
@ApiTags('Webhooks')
@Controller('v1/organization/webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @Authenticated({ permissions: ['webhooks:write'] })
  @ApiOperation({
    summary: 'Add an endpoint that receives signed events; its secret is in this answer only',
    description: 'Recorded as webhook.created. At most 10 endpoints per organization (400 FAILED_PRECONDITION).',
  })
  @ApiCreatedResponse({ type: CreateWebhookResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.FAILED_PRECONDITION, ErrorCode.PAYLOAD_TOO_LARGE)
  @Header('Cache-Control', 'no-store')
  async create(
    @Caller() principal: Principal,
    @ValidBody() body: CreateWebhookDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<CreateWebhookResponse> {
    const { webhook, secret } = await this.webhooks.create(principal, body, request);
    return { webhook: { ...WebhookView.from(webhook), secret } };
  }

  @Get()
  @Authenticated({ permissions: ['webhooks:read'] })
  @ApiOperation({ summary: "List the organization's endpoints, newest first (never a secret)" })
  @ApiOkResponse({ type: WebhookListResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT)
  async list(@Caller() principal: Principal, @ValidQuery() query: PageQueryDto): Promise<WebhookListResponse> {
    const page = await this.webhooks.list(principal, query);
    return {
      webhooks: page.items.map(WebhookView.from),
      ...PageMetaView.of(page),
      loopback_urls_allowed: this.webhooks.loopbackUrlsAllowed,
    };
  }

  @Delete(':id')
  @Authenticated({ permissions: ['webhooks:write'] })
  @ApiOperation({
    summary: 'Delete an endpoint; its pending deliveries are dropped',
    description: "Recorded as webhook.deleted. Another organization's endpoint is 404.",
  })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async remove(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<WebhookResponse> {
    return { webhook: WebhookView.from(await this.webhooks.remove(principal, id, request)) };
  }

  @Get(':id/deliveries')
  @Authenticated({ permissions: ['webhooks:read'] })
  @ApiOperation({ summary: "The endpoint's delivery log, newest first: status, attempts, last answer, next attempt" })
  @ApiOkResponse({ type: DeliveryListResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async deliveries(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @ValidQuery() query: PageQueryDto,
  ): Promise<DeliveryListResponse> {
    const page = await this.webhooks.deliveryLog(principal, id, query);
    return { deliveries: page.items.map(DeliveryView.from), ...PageMetaView.of(page) };
  }

  @Post(':id/enable')
  @HttpCode(200)
  @Authenticated({ permissions: ['webhooks:write'] })
  @ApiOperation({
    summary: 'Enable an endpoint disabled after failing: its waiting deliveries are sent, new events reach it',
    description:
      'Recorded as webhook.enabled. An endpoint that is not disabled is answered as it is. Another ' +
      "organization's endpoint is 404.",
  })
  @ApiOkResponse({ type: WebhookResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async enable(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<WebhookResponse> {
    return { webhook: WebhookView.from(await this.webhooks.enable(principal, id, request)) };
  }

  @Post(':id/test')
  @HttpCode(202)
  @Authenticated({ permissions: ['webhooks:write'] })
  @ApiOperation({
    summary: 'Send a webhook.test event to this endpoint now (retried like any other)',
    description:
      'At most WEBHOOK_TESTS_PER_MINUTE (10) per organization: past it 429 with Retry-After. A disabled endpoint is ' +
      '400 FAILED_PRECONDITION.',
  })
  @ApiAcceptedResponse({ type: DeliveryResponse })
  @ApiErrors(
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.FAILED_PRECONDITION,
    ErrorCode.NOT_FOUND,
    ErrorCode.RESOURCE_EXHAUSTED,
  )
  async test(@Caller() principal: Principal, @Param('id', UuidPipe) id: string): Promise<DeliveryResponse> {
    return { delivery: DeliveryView.from(await this.webhooks.test(principal, id)) };
  }

  @Get(':id/deliveries/:deliveryId')
  @Authenticated({ permissions: ['webhooks:read'] })
  @ApiOperation({
    summary: 'One delivery: the body sent, and what its last attempt read of the answer (status, headers, first 4 KiB)',
    description: "Another endpoint's delivery is 404 webhook delivery not found; another organization's endpoint 404.",
  })
  @ApiOkResponse({ type: DeliveryDetailResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async delivery(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @Param('deliveryId', UuidPipe) deliveryId: string,
  ): Promise<DeliveryDetailResponse> {
    return { delivery: DeliveryDetailView.fromDetail(await this.webhooks.deliveryDetail(principal, id, deliveryId)) };
  }

  @Post(':id/deliveries/:deliveryId/resend')
  @HttpCode(202)
  @Authenticated({ permissions: ['webhooks:write'] })
  @ApiOperation({
    summary: 'Send the event of a delivery again: a new delivery, same body and webhook-id, signed anew',
    description:
      'Sent at once and retried like any other. With the test deliveries, at most WEBHOOK_TESTS_PER_MINUTE (10) per ' +
      'organization: past it 429 with Retry-After. A disabled endpoint is 400 FAILED_PRECONDITION.',
  })
  @ApiAcceptedResponse({ type: DeliveryResponse })
  @ApiErrors(
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.FAILED_PRECONDITION,
    ErrorCode.NOT_FOUND,
    ErrorCode.RESOURCE_EXHAUSTED,
  )
  async resend(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @Param('deliveryId', UuidPipe) deliveryId: string,
  ): Promise<DeliveryResponse> {
    return { delivery: DeliveryView.from(await this.webhooks.resend(principal, id, deliveryId)) };
  }

  @Post(':id/rotate-secret')
  @HttpCode(200)
  @Authenticated({ permissions: ['webhooks:write'] })
  @ApiOperation({
    summary: "Replace the endpoint's signing secret; the new one is in this answer only",
    description:
      'For overlap_seconds (default 86400, at most 7 days) every delivery is signed with both secrets (two ' +
      'signatures in webhook-signature), then with the new one only. Recorded as webhook.secret_rotated.',
  })
  @ApiBody({ type: RotateWebhookSecretDto, required: false })
  @ApiOkResponse({ type: RotateWebhookSecretResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND, ErrorCode.PAYLOAD_TOO_LARGE)
  @Header('Cache-Control', 'no-store')
  async rotateSecret(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @ValidBody() body: RotateWebhookSecretDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<RotateWebhookSecretResponse> {
    const { webhook, secret } = await this.webhooks.rotateSecret(principal, id, body.overlap_seconds, request);
    return { webhook: { ...WebhookView.from(webhook), secret } };
  }
}
