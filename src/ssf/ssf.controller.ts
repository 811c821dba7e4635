import { Controller, Delete, Get, Header, HttpCode, Param, Post, Req } from '@nestjs/common';
import { ValidBody, ValidQuery } from '../common/validation.pipe';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import type { Request } from 'express';
import { JWKS_PATH } from '../auth/jwks.controller';
import { ApiErrors } from '../common/openapi';
import { ErrorCode } from '../common/errors';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Authenticated, Caller, Public } from '../identity/access.decorators';
import { ResourceServerGuard } from '../resource-servers/resource-server.guard';
import type { AuthenticatedResourceServer } from '../resource-servers/resource-servers.service';
import { PollAnswer, POLL_ANSWER_SCHEMA, POLL_BODY_SCHEMA, pollRequest } from './dto/poll.dto';
import {
  CREATE_STREAM_BODY_SCHEMA,
  createStreamRequest,
  DeleteStreamQuery,
  POLL_DELIVERY,
  STREAM_SCHEMA,
  StreamQuery,
} from './dto/stream.dto';
import { EVENT_TYPES } from './ssf-event.entity';
import { SsfPollService } from './ssf-poll.service';
import type { SsfStream } from './ssf-stream.entity';
import { SsfStreamsService } from './ssf-streams.service';

/** SSF 1.0 stream configuration, as GET /ssf/stream answers it. */
interface StreamConfiguration {
  stream_id: string;
  iss: string;
  aud: string;
  delivery: { method: string; endpoint_url: string };
  events_supported: string[];
  events_requested: string[];
  events_delivered: string[];
  description?: string;
}

/**
 * The revocation feed (OpenID Shared Signals Framework 1.0, CAEP 1.0, poll delivery RFC 8936): each resource server's
 * default stream and the instance streams its verifiers make, authenticated by its client credentials
 * (docs/revocation-feed.md, docs/adr/0031-revocation-feed-in-production.md).
 */
@ApiTags('Revocation feed')
@Controller()
export class SsfController {
  private readonly issuer: string;
  private readonly base: string;

  constructor(
    private readonly streams: SsfStreamsService,
    private readonly polls: SsfPollService,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.issuer = config.jwt.issuer;
    this.base = config.console.publicBaseUrl;
  }

  @Get('.well-known/ssf-configuration')
  @Public()
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({ summary: 'Shared Signals Framework 1.0 transmitter configuration' })
  @ApiOkResponse({ description: 'The configuration', schema: { type: 'object' } })
  configuration(): object {
    return {
      spec_version: '1_0',
      issuer: this.issuer,
      jwks_uri: `${this.base}${JWKS_PATH}`,
      delivery_methods_supported: [POLL_DELIVERY],
      configuration_endpoint: `${this.base}/ssf/stream`,
      authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
      default_subjects: 'ALL',
    };
  }

  @Get('ssf/stream')
  @Authenticated(ResourceServerGuard)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: "The calling resource server's default stream, or one of its instance streams" })
  @ApiOkResponse({ description: 'The stream configuration', schema: STREAM_SCHEMA })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.UNAUTHENTICATED, ErrorCode.NOT_FOUND)
  async stream(
    @Caller() server: AuthenticatedResourceServer,
    @ValidQuery() query: StreamQuery,
  ): Promise<StreamConfiguration> {
    // The default stream's own id names it too.
    if (query.stream_id === undefined || query.stream_id.toLowerCase() === server.id) {
      return this.configurationOf(server, null);
    }
    return this.configurationOf(server, await this.streams.find(server, query.stream_id));
  }

  @Post('ssf/stream')
  @Authenticated(ResourceServerGuard)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Create an instance stream: every event is delivered to it, at its own poll endpoint, until it is idle',
  })
  @ApiBody({ required: false, schema: CREATE_STREAM_BODY_SCHEMA })
  @ApiCreatedResponse({ description: 'The new stream configuration', schema: STREAM_SCHEMA })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.UNAUTHENTICATED, ErrorCode.RESOURCE_EXHAUSTED)
  async createStream(
    @Caller() server: AuthenticatedResourceServer,
    @ValidBody() body: unknown,
  ): Promise<StreamConfiguration> {
    const { description } = createStreamRequest(body);
    return this.configurationOf(server, await this.streams.create(server, description));
  }

  @Delete('ssf/stream')
  @Authenticated(ResourceServerGuard)
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete an instance stream and its deliveries' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.UNAUTHENTICATED, ErrorCode.NOT_FOUND)
  async deleteStream(
    @Caller() server: AuthenticatedResourceServer,
    @ValidQuery() query: DeleteStreamQuery,
  ): Promise<void> {
    await this.streams.delete(server, query.stream_id);
  }

  @Post('ssf/poll')
  @Authenticated(ResourceServerGuard)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Poll the default stream for SETs (RFC 8936): acknowledge, report errors, long-poll' })
  @ApiBody({ schema: POLL_BODY_SCHEMA })
  @ApiOkResponse({ description: '`{ sets: { jti: SET }, moreAvailable }`', schema: POLL_ANSWER_SCHEMA })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.UNAUTHENTICATED, ErrorCode.RESOURCE_EXHAUSTED)
  async poll(
    @Caller() server: AuthenticatedResourceServer,
    @Req() request: Request,
    @ValidBody() body: unknown,
  ): Promise<PollAnswer> {
    return this.polls.poll(server, pollRequest(body), goneSignal(request));
  }

  @Post('ssf/poll/:streamId')
  @Authenticated(ResourceServerGuard)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Poll an instance stream for SETs (RFC 8936), as POST /ssf/poll' })
  @ApiBody({ schema: POLL_BODY_SCHEMA })
  @ApiOkResponse({ description: '`{ sets: { jti: SET }, moreAvailable }`', schema: POLL_ANSWER_SCHEMA })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.UNAUTHENTICATED, ErrorCode.NOT_FOUND, ErrorCode.RESOURCE_EXHAUSTED)
  async pollStream(
    @Caller() server: AuthenticatedResourceServer,
    @Req() request: Request,
    @Param('streamId') streamId: string,
    @ValidBody() body: unknown,
  ): Promise<PollAnswer> {
    const poll = pollRequest(body);
    const stream =
      streamId.toLowerCase() === server.id
        ? server
        : { ...server, id: (await this.streams.polled(server, streamId)).id };
    return this.polls.poll(stream, poll, goneSignal(request));
  }

  private configurationOf(server: AuthenticatedResourceServer, stream: SsfStream | null): StreamConfiguration {
    const endpoint = stream === null ? `${this.base}/ssf/poll` : `${this.base}/ssf/poll/${stream.id}`;
    return {
      stream_id: stream?.id ?? server.id,
      iss: this.issuer,
      aud: server.audience,
      delivery: { method: POLL_DELIVERY, endpoint_url: endpoint },
      events_supported: [...EVENT_TYPES],
      events_requested: [...EVENT_TYPES],
      events_delivered: [...EVENT_TYPES],
      ...(stream?.description == null ? {} : { description: stream.description }),
    };
  }
}

/** Aborted when the response closes before it was sent: the receiver went away (not the request's close). */
function goneSignal(request: Request): AbortSignal {
  const gone = new AbortController();
  request.res?.once('close', () => gone.abort());
  return gone.signal;
}
