import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppError, ErrorCode, errorBody, HTTP_STATUS } from './errors';
import { BASIC_CHALLENGE } from './basic-auth';
import { isDatabaseUnavailable } from './database-errors';

/**
 * The paths whose errors take the OAuth shape `{ error, error_description }` (RFC 6749 section 5.2, RFC 7662). A path,
 * not a route marker: a body too large or of the wrong type is refused before any route is chosen.
 */
const OAUTH_PATH_PREFIX = '/oauth/';

/** What the body parser throws (it is not a Nest HttpException). */
interface BodyParserError {
  type: string;
  status?: number;
}

export function isBodyParserError(error: unknown): error is BodyParserError {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as BodyParserError).type === 'string' &&
    typeof (error as BodyParserError).status === 'number'
  );
}

/** Maps a Nest HttpException (thrown by the framework itself) onto our codes. */
function fromHttpException(exception: HttpException): AppError {
  const status = exception.getStatus();
  switch (status) {
    case 400:
      return new AppError('invalid_argument');
    case 401:
      return new AppError('unauthenticated');
    case 403:
      return new AppError('permission_denied');
    case 404:
      return new AppError('route_not_found');
    case 413:
      return new AppError('body_too_large');
    case 429:
      return new AppError('too_many_requests');
    case 503:
      return new AppError('service_unavailable');
    default:
      return new AppError(status >= 400 && status < 500 ? 'invalid_argument' : 'internal');
  }
}

export function toAppError(exception: unknown): AppError | undefined {
  if (exception instanceof AppError) return exception;
  if (exception instanceof HttpException) return fromHttpException(exception);
  if (isBodyParserError(exception)) {
    return new AppError(exception.type === 'entity.too.large' ? 'body_too_large' : 'invalid_argument');
  }
  if (isDatabaseUnavailable(exception)) return new AppError('database_unavailable');
  return undefined;
}

/** The one place errors become responses: `{ code, message, reason }` JSON, never HTML or a stack. */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('ExceptionFilter');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const response = http.getResponse<Response>();
    const request = http.getRequest<Request>();
    let error = toAppError(exception);
    if (error === undefined) {
      // The request id is bound to every line logged while serving the request (request-logger.ts).
      this.logger.error({ err: exception, method: request.method, path: request.path }, 'unexpected error');
      error = new AppError('internal');
    } else if (error.code === ErrorCode.UNAVAILABLE) {
      this.logger.warn({ err: exception }, 'dependency unavailable');
    }
    if (request.path.startsWith(OAUTH_PATH_PREFIX)) sendOAuthError(request, response, error);
    else sendError(response, error);
  }
}

export function sendError(response: Response, error: AppError): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  for (const [name, value] of Object.entries(error.headers)) response.setHeader(name, value);
  response
    .status(HTTP_STATUS[error.code])
    .type('application/json')
    .send(JSON.stringify(errorBody(error)));
}

/**
 * The OAuth shape, `reason` beside RFC 6749's members (section 5.2 allows more), with the status of HTTP_STATUS and `Cache-Control: no-store`. The ApiKey and Bearer challenges are
 * not these endpoints': RFC 6749 section 5.2 answers a client that tried the Authorization header with a 401 that
 * challenges the scheme the endpoint takes (Basic), and a client that did not with none.
 */
function sendOAuthError(request: Request, response: Response, error: AppError): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  for (const [name, value] of Object.entries(error.headers)) {
    if (name !== 'WWW-Authenticate') response.setHeader(name, value);
  }
  if (error.code === ErrorCode.UNAUTHENTICATED && request.headers.authorization) {
    for (const [name, value] of Object.entries(BASIC_CHALLENGE)) response.setHeader(name, value);
  }
  const body = {
    error: error.oauth.error,
    error_description: error.oauth.description ?? error.message,
    reason: error.reason,
  };
  response
    .status(HTTP_STATUS[error.code])
    .setHeader('Cache-Control', 'no-store')
    .type('application/json')
    .send(JSON.stringify(body));
}
