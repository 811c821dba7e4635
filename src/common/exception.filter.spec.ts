import { ArgumentsHost, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { API_KEY_CHALLENGE, AppError, Messages, tooManyRequests } from './errors';
import { AllExceptionsFilter } from './exception.filter';

interface Sent {
  status?: number;
  headers: Record<string, string>;
  body?: unknown;
}

/** The filter's answer to `exception` on `path`, read from a stand-in response. */
function render(exception: unknown, path: string, authorization?: string): Sent {
  const sent: Sent = { headers: {} };
  const response = {
    headersSent: false,
    setHeader(name: string, value: string) {
      sent.headers[name] = value;
      return response;
    },
    status(status: number) {
      sent.status = status;
      return response;
    },
    type() {
      return response;
    },
    send(body: string) {
      sent.body = JSON.parse(body);
      return response;
    },
  };
  const request = { path, method: 'POST', headers: authorization === undefined ? {} : { authorization } };
  const host = {
    switchToHttp: () => ({
      getRequest: () => request as unknown as Request,
      getResponse: () => response as unknown as Response,
    }),
  } as unknown as ArgumentsHost;
  new AllExceptionsFilter().catch(exception, host);
  return sent;
}

describe('AllExceptionsFilter', () => {
  it('renders an AppError as { code, message, reason } with its headers, the status from HTTP_STATUS', () => {
    const error = new AppError('api_key_revoked', { headers: { ...API_KEY_CHALLENGE } });
    expect(render(error, '/v1/token')).toEqual({
      status: 401,
      headers: { ...API_KEY_CHALLENGE },
      body: { code: 'UNAUTHENTICATED', message: 'api key revoked', reason: 'api_key_revoked' },
    });
  });

  it("takes the site's message where it says more, the catalogue's code and reason", () => {
    const error = new AppError('allowed_cidrs_invalid', { message: 'allowed_cidrs holds at most 100 entries' });
    expect(render(error, '/v1/user-api-keys').body).toEqual({
      code: 'INVALID_ARGUMENT',
      message: 'allowed_cidrs holds at most 100 entries',
      reason: 'allowed_cidrs_invalid',
    });
  });

  it('renders the wire code of a body too large, and no OAuth detail outside the OAuth endpoints', () => {
    expect(render(new AppError('unknown_resource'), '/v1/token').body).toEqual({
      code: 'INVALID_ARGUMENT',
      message: 'unknown resource',
      reason: 'unknown_resource',
    });
    expect(render(new AppError('body_too_large'), '/v1/token')).toMatchObject({
      status: 413,
      body: { code: 'INVALID_ARGUMENT', message: 'request body too large', reason: 'body_too_large' },
    });
  });

  describe('on /oauth/ (RFC 6749 section 5.2)', () => {
    it('names the error from the code, the message as its description, the reason beside them, no-store', () => {
      const error = new AppError('introspection_request_invalid', { message: 'token is required' });
      expect(render(error, '/oauth/introspect')).toEqual({
        status: 400,
        headers: { 'Cache-Control': 'no-store' },
        body: {
          error: 'invalid_request',
          error_description: 'token is required',
          reason: 'introspection_request_invalid',
        },
      });
      const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      expect(render(new Error('a bug'), '/oauth/token').body).toEqual({
        error: 'server_error',
        error_description: Messages.internal,
        reason: 'internal',
      });
      expect(logged).toHaveBeenCalledTimes(1);
      logged.mockRestore();
    });

    it("takes the reason's OAuth name and the error's own description, keeping the code's status", () => {
      const error = new AppError('scope_not_granted', { oauthDescription: 'beyond the key' });
      expect(render(error, '/oauth/token')).toMatchObject({
        status: 400,
        body: { error: 'invalid_scope', error_description: 'beyond the key', reason: 'scope_not_granted' },
      });
    });

    it('drops the ApiKey challenge; a 401 is challenged with Basic only when the client used the header', () => {
      const refused = new AppError('api_key_revoked', { headers: { ...API_KEY_CHALLENGE } });
      expect(render(refused, '/oauth/token')).toEqual({
        status: 401,
        headers: { 'Cache-Control': 'no-store' },
        body: { error: 'invalid_client', error_description: 'api key revoked', reason: 'api_key_revoked' },
      });
      expect(render(refused, '/oauth/token', 'Bearer abc').headers['WWW-Authenticate']).toBe('Basic realm="gatehouse"');
      const badRequest = render(new AppError('invalid_argument'), '/oauth/token', 'Basic eDp5');
      expect(badRequest.headers['WWW-Authenticate']).toBeUndefined();
    });

    it('keeps the other headers: 429 temporarily_unavailable with Retry-After', () => {
      expect(render(tooManyRequests('too_many_failed_exchanges', 1500), '/oauth/token')).toEqual({
        status: 429,
        headers: { 'Retry-After': '2', 'Cache-Control': 'no-store' },
        body: {
          error: 'temporarily_unavailable',
          error_description: Messages.tooManyRequests,
          reason: 'too_many_failed_exchanges',
        },
      });
    });
  });
});
