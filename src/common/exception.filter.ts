import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppError, ErrorCode, HTTP_STATUS, Messages, OAUTH_ERROR, wireCode } from './errors';
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
      return new AppError(ErrorCode.INVALID_ARGUMENT, Messages.invalidArgument);
    case 401:
      return new AppError(ErrorCode.UNAUTHENTICATED, Messages.userNotAuthenticated);
    case 403:
      return new AppError(ErrorCode.PERMISSION_DENIED, Messages.insufficientPermissions);
    case 404:
      return new AppError(ErrorCode.NOT_FOUND, Messages.routeNotFound);
    case 413:
      return new AppError(ErrorCode.PAYLOAD_TOO_LARGE, Messages.bodyTooLarge);
    case 429:
      return new AppError(ErrorCode.RESOURCE_EXHAUSTED, Messages.tooManyRequests);
    case 503:
      return new AppError(ErrorCode.UNAVAILABLE, Messages.unavailable);
    default:
      return status >= 400 && status < 500
        ? new AppError(ErrorCode.INVALID_ARGUMENT, Messages.invalidArgument)
        : new AppError(ErrorCode.INTERNAL, Messages.internal);
  }
}

export function toAppError(exception: unknown): AppError | undefined {
  if (exception instanceof AppError) return exception;
  if (exception instanceof HttpException) return fromHttpException(exception);
  if (isBodyParserError(exception)) {
    return exception.type === 'entity.too.large'
      ? new AppError(ErrorCode.PAYLOAD_TOO_LARGE, Messages.bodyTooLarge)
      : new AppError(ErrorCode.INVALID_ARGUMENT, Messages.invalidArgument);
  }
  if (isDatabaseUnavailable(exception)) return new AppError(ErrorCode.UNAVAILABLE, Messages.unavailable);
  return undefined;
}

/** The one place errors become responses: `{ code, message }` JSON, never HTML or a stack. */
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
      error = new AppError(ErrorCode.INTERNAL, Messages.internal);
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
    .send(JSON.stringify({ code: wireCode(error.code), message: error.message, ...error.details }));
}

/**
 * The OAuth shape, with the status of HTTP_STATUS and `Cache-Control: no-store`. The ApiKey and Bearer challenges are
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
    error: error.oauth?.error ?? OAUTH_ERROR[error.code],
    error_description: error.oauth?.description ?? error.message,
  };
  response
    .status(HTTP_STATUS[error.code])
    .setHeader('Cache-Control', 'no-store')
    .type('application/json')
    .send(JSON.stringify(body));
}
