import { Body, Controller, Get, Header, HttpCode, Post, Req } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { BASIC_CHALLENGE, basicCredentials } from '../common/basic-auth';
import { AppError, ErrorCode, invalidArgument, Messages } from '../common/errors';
import { ApiErrors, RESOURCE_SERVER_SCHEME } from '../common/openapi';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Public } from '../identity/access.decorators';
import { AuthenticatedResourceServer, ResourceServersService } from '../resource-servers/resource-servers.service';
import { SetSigner } from './set-signer';
import { EVENT_TYPES } from './ssf-event.entity';
import { SsfRepository } from './ssf.repository';
import { WakeSignal } from './wake-signal';
import { UUID } from '../common/uuid';
import { JWKS_PATH } from '../auth/jwks.controller';

const POLL_DELIVERY = 'urn:ietf:rfc:8936';
const MAX_EVENTS = 1000;
const DEFAULT_MAX_EVENTS = 100;

/** An RFC 8936 poll request, checked (docs/revocation-feed.md#poll). */
interface PollRequest {
  maxEvents: number;
  returnImmediately: boolean;
  ack: string[];
  setErrs: Array<[jti: string, error: { err: string; description?: string }]>;
}

function pollRequest(body: unknown): PollRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidArgument();
  const b = body as Record<string, unknown>;
  const known = new Set(['maxEvents', 'returnImmediately', 'ack', 'setErrs']);
  if (Object.keys(b).some((name) => !known.has(name))) throw invalidArgument();
  const maxEvents = b.maxEvents ?? DEFAULT_MAX_EVENTS;
  if (typeof maxEvents !== 'number' || !Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > MAX_EVENTS) {
    throw invalidArgument();
  }
  const returnImmediately = b.returnImmediately ?? false;
  if (typeof returnImmediately !== 'boolean') throw invalidArgument();
  const ack = b.ack ?? [];
  if (!Array.isArray(ack) || ack.length > MAX_EVENTS || !ack.every((jti) => typeof jti === 'string')) {
    throw invalidArgument();
  }
  const setErrs = b.setErrs ?? {};
  if (typeof setErrs !== 'object' || setErrs === null || Array.isArray(setErrs)) throw invalidArgument();
  const errors = Object.entries(setErrs as Record<string, unknown>);
  if (errors.length > MAX_EVENTS) throw invalidArgument();
  for (const [, error] of errors) {
    const e = error as { err?: unknown; description?: unknown } | null;
    if (typeof e !== 'object' || e === null || typeof e.err !== 'string') throw invalidArgument();
    if (e.description !== undefined && typeof e.description !== 'string') throw invalidArgument();
  }
  return {
    maxEvents,
    returnImmediately,
    // An id that cannot be one of ours is nobody's delivery: ignored, as RFC 8936 lets a transmitter do.
    ack: ack.filter((jti) => UUID.test(jti)),
    setErrs: (errors as PollRequest['setErrs']).filter(([jti]) => UUID.test(jti)),
  };
}

const unauthorized = (): AppError =>
  new AppError(ErrorCode.UNAUTHENTICATED, Messages.userNotAuthenticated, {
    headers: { ...BASIC_CHALLENGE },
  });

/**
 * The revocation feed (OpenID Shared Signals Framework 1.0, CAEP 1.0, poll delivery RFC 8936): one stream per
 * resource server, authenticated by its client credentials (docs/revocation-feed.md).
 */
@ApiTags('Revocation feed')
@Controller()
export class SsfController {
  private readonly issuer: string;
  private readonly base: string;
  private readonly waitMs: number;

  constructor(
    private readonly resourceServers: ResourceServersService,
    private readonly events: SsfRepository,
    private readonly signer: SetSigner,
    private readonly signal: WakeSignal,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.issuer = config.jwt.issuer;
    this.base = config.console.publicBaseUrl;
    this.waitMs = config.ssf.pollWaitSeconds * 1000;
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
  @Public()
  @Header('Cache-Control', 'no-store')
  @ApiSecurity(RESOURCE_SERVER_SCHEME)
  @ApiOperation({ summary: "The calling resource server's stream" })
  @ApiOkResponse({ description: 'The stream configuration', schema: { type: 'object' } })
  @ApiErrors(401)
  async stream(@Req() request: Request): Promise<object> {
    const server = await this.caller(request);
    return {
      stream_id: server.id,
      iss: this.issuer,
      aud: server.audience,
      delivery: { method: POLL_DELIVERY, endpoint_url: `${this.base}/ssf/poll` },
      events_supported: [...EVENT_TYPES],
      events_requested: [...EVENT_TYPES],
      events_delivered: [...EVENT_TYPES],
    };
  }

  @Post('ssf/poll')
  @Public()
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiSecurity(RESOURCE_SERVER_SCHEME)
  @ApiOperation({ summary: 'Poll the stream for SETs (RFC 8936): acknowledge, report errors, long-poll' })
  @ApiBody({
    schema: {
      type: 'object',
      properties: {
        maxEvents: { type: 'integer', minimum: 1, maximum: MAX_EVENTS, default: DEFAULT_MAX_EVENTS },
        returnImmediately: { type: 'boolean', default: false },
        ack: { type: 'array', items: { type: 'string' } },
        setErrs: { type: 'object', additionalProperties: { type: 'object' } },
      },
    },
  })
  @ApiOkResponse({ description: '`{ sets: { jti: SET }, moreAvailable }`', schema: { type: 'object' } })
  @ApiErrors(400, 401)
  async poll(
    @Req() request: Request,
    @Body() body: unknown,
  ): Promise<{ sets: Record<string, string>; moreAvailable: boolean }> {
    const server = await this.caller(request);
    const poll = pollRequest(body);
    const now = new Date();
    await this.events.acknowledgeAll(server.id, poll.ack, now);
    for (const [jti, error] of poll.setErrs) await this.events.recordError(server.id, jti, error, now);

    const deadline = Date.now() + (poll.returnImmediately ? 0 : this.waitMs);
    const gone = new AbortController();
    // The response's close before it was sent: the receiver went away (the request's own close comes with its body).
    request.res?.once('close', () => gone.abort());
    for (;;) {
      // Armed before the query: an event committed between the query and the wait still wakes it.
      const woken = this.signal.next(Math.max(0, deadline - Date.now()), gone.signal);
      const pending = await this.events.findPending(server.id, poll.maxEvents + 1);
      if (pending.length > 0 || Date.now() >= deadline || gone.signal.aborted) {
        const sets: Record<string, string> = {};
        for (const set of pending.slice(0, poll.maxEvents))
          sets[set.jti] = await this.signer.sign(set, server.audience);
        return { sets, moreAvailable: pending.length > poll.maxEvents };
      }
      await woken;
    }
  }

  private async caller(request: Request): Promise<AuthenticatedResourceServer> {
    const credentials = basicCredentials(request.headers.authorization ?? '');
    const server =
      credentials === null ? null : await this.resourceServers.authenticate(credentials.id, credentials.secret);
    if (server === null) throw unauthorized();
    return server;
  }
}
