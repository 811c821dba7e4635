import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { CONSOLE_SECURITY_HEADERS } from '../../common/console-assets';
import { AppError, ErrorCode, HTTP_STATUS } from '../../common/errors';
import { toAppError } from '../../common/exception.filter';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { StateUntouched } from './sso-errors';
import { bindingCookieScope, clearedBindingCookie } from './sso-rules';

const TITLES: Record<ErrorCode, string> = {
  [ErrorCode.INVALID_ARGUMENT]: 'Single sign-on did not complete',
  [ErrorCode.FAILED_PRECONDITION]: 'Single sign-on did not complete',
  [ErrorCode.UNAUTHENTICATED]: 'Single sign-on did not complete',
  [ErrorCode.PAYLOAD_TOO_LARGE]: 'Single sign-on did not complete',
  [ErrorCode.NOT_FOUND]: 'Single sign-on is not set up',
  [ErrorCode.PERMISSION_DENIED]: 'No access to the console',
  [ErrorCode.RESOURCE_EXHAUSTED]: 'Too many sign-ins',
  [ErrorCode.UNAVAILABLE]: 'Single sign-on is unavailable right now',
  [ErrorCode.INTERNAL]: 'Something went wrong',
};

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escape = (text: string): string => text.replace(/[&<>"']/g, (character) => ESCAPES[character]);

/** A page with no script, no style and no outside resource: the console's Content-Security-Policy holds for it. */
export function ssoPage(title: string, message: string, signInUrl: string): string {
  const sentence = message.charAt(0).toUpperCase() + message.slice(1);
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escape(title)} · Gatehouse</title></head>`,
    '<body><main>',
    `<h1>${escape(title)}</h1>`,
    `<p>${escape(sentence)}.</p>`,
    `<p><a href="${escape(signInUrl)}">Back to the console's sign-in page</a></p>`,
    '</main></body>',
    '</html>',
    '',
  ].join('\n');
}

/**
 * The callback's answers are pages, not JSON: the browser lands there from the identity provider, so a refusal is a
 * sentence a person reads, with the status of the error's code (HTTP_STATUS) and the binding cookie removed once the
 * sign-in is used up (StateUntouched: not before). Anything unexpected is logged with the request id, as the global
 * filter does, and shown as a generic page.
 */
@Catch()
export class SsoPageFilter implements ExceptionFilter {
  private readonly logger = new Logger('ConsoleSso');
  private readonly signInUrl: string;
  private readonly cookie: string;

  constructor(@InjectConfig() config: AppConfiguration) {
    this.signInUrl = `${config.console.publicBaseUrl}/console/sign-in`;
    this.cookie = clearedBindingCookie(bindingCookieScope(config.console.publicBaseUrl));
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    let error = toAppError(exception);
    if (error === undefined) {
      this.logger.error({ err: exception }, 'unexpected error');
      error = new AppError('internal');
    } else if (error.code === ErrorCode.UNAVAILABLE) {
      this.logger.warn({ err: exception }, 'dependency unavailable');
    }
    if (response.headersSent) {
      response.end();
      return;
    }
    response.set(CONSOLE_SECURITY_HEADERS);
    for (const [name, value] of Object.entries(error.headers)) response.setHeader(name, value);
    if (!(error instanceof StateUntouched)) response.setHeader('Set-Cookie', this.cookie);
    response
      .status(HTTP_STATUS[error.code])
      .setHeader('Cache-Control', 'no-store')
      .type('text/html; charset=utf-8')
      .send(ssoPage(TITLES[error.code], error.message, this.signInUrl));
  }
}
