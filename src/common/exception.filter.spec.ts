import { ArgumentsHost, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { API_KEY_CHALLENGE, AppError, ErrorCode, Messages, tooManyRequests } from './errors';
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
  it('renders an AppError as { code, message } with its headers, the status from HTTP_STATUS', () => {
    const error = new AppError(ErrorCode.UNAUTHENTICATED, Messages.apiKeyRevoked, {
      headers: { ...API_KEY_CHALLENGE },
    });
    expect(render(error, '/v1/token')).toEqual({
      status: 401,
      headers: { ...API_KEY_CHALLENGE },
      body: { code: 'UNAUTHENTICATED', message: 'api key revoked' },
    });
  });

  it('ignores the OAuth detail outside the OAuth endpoints', () => {
    const error = new AppError(ErrorCode.INVALID_ARGUMENT, Messages.unknownResource, {
      oauth: { error: 'invalid_target' },
    });
    expect(render(error, '/v1/token').body).toEqual({ code: 'INVALID_ARGUMENT', message: 'unknown resource' });
  });

  describe('on /oauth/ (RFC 6749 section 5.2)', () => {
    it('names the error from the code, the message as its description, no-store', () => {
      expect(render(new AppError(ErrorCode.INVALID_ARGUMENT, 'token is required'), '/oauth/introspect')).toEqual({
        status: 400,
        headers: { 'Cache-Control': 'no-store' },
        body: { error: 'invalid_request', error_description: 'token is required' },
      });
      const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      expect(render(new Error('a bug'), '/oauth/token').body).toEqual({
        error: 'server_error',
        error_description: Messages.internal,
      });
      expect(logged).toHaveBeenCalledTimes(1);
      logged.mockRestore();
    });

    it("takes the error's own OAuth name and description, keeping the code's status", () => {
      const error = new AppError(ErrorCode.INVALID_ARGUMENT, Messages.invalidArgument, {
        oauth: { error: 'invalid_scope', description: 'beyond the key' },
      });
      expect(render(error, '/oauth/token')).toMatchObject({
        status: 400,
        body: { error: 'invalid_scope', error_description: 'beyond the key' },
      });
    });

    it('drops the ApiKey challenge; a 401 is challenged with Basic only when the client used the header', () => {
      const refused = new AppError(ErrorCode.UNAUTHENTICATED, Messages.apiKeyRevoked, {
        headers: { ...API_KEY_CHALLENGE },
      });
      expect(render(refused, '/oauth/token')).toEqual({
        status: 401,
        headers: { 'Cache-Control': 'no-store' },
        body: { error: 'invalid_client', error_description: 'api key revoked' },
      });
      expect(render(refused, '/oauth/token', 'Bearer abc').headers['WWW-Authenticate']).toBe('Basic realm="gatehouse"');
      const badRequest = render(new AppError(ErrorCode.INVALID_ARGUMENT, 'x'), '/oauth/token', 'Basic eDp5');
      expect(badRequest.headers['WWW-Authenticate']).toBeUndefined();
    });

    it('keeps the other headers: 429 temporarily_unavailable with Retry-After', () => {
      expect(render(tooManyRequests(1500), '/oauth/token')).toEqual({
        status: 429,
        headers: { 'Retry-After': '2', 'Cache-Control': 'no-store' },
        body: { error: 'temporarily_unavailable', error_description: Messages.tooManyRequests },
      });
    });
  });
});
