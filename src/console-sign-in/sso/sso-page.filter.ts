import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { CONSOLE_SECURITY_HEADERS, consoleStylesheets } from '../../common/console-assets';
import { AppError, ErrorCode, HTTP_STATUS } from '../../common/errors';
import { AllExceptionsFilter, toAppError } from '../../common/exception.filter';
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

/** A message as a sentence: capitalized, unless it starts with an e-mail address, which stays as it came. */
function sentence(message: string): string {
  const first = message.split(' ', 1)[0];
  const text = first.includes('@') ? message : message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/**
 * A page with no script, no inline style and no outside resource, styled by the console's own stylesheets (`styles`,
 * their paths under /console): the console's Content-Security-Policy holds for it, and it looks like the sign-in page
 * it leads back to.
 */
export function ssoPage(title: string, message: string, signInUrl: string, styles: readonly string[] = []): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    ...styles.map((href) => `<link rel="stylesheet" href="${escape(href)}">`),
    `<title>${escape(title)} · Gatehouse</title></head>`,
    '<body><main id="main" class="sign-in">',
    `<h1>${escape(title)}</h1>`,
    `<p class="message message-error" role="alert">${escape(sentence(message))}</p>`,
    `<p class="actions"><a class="button button-primary" href="${escape(signInUrl)}">Back to the console's sign-in page</a></p>`,
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
  private readonly styles: string[];

  constructor(@InjectConfig() config: AppConfiguration) {
    this.signInUrl = `${config.console.publicBaseUrl}/console/sign-in`;
    this.cookie = clearedBindingCookie(bindingCookieScope(config.console.publicBaseUrl));
    this.styles = consoleStylesheets(config.console.assetsDir);
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
      .send(ssoPage(TITLES[error.code], error.message, this.signInUrl, this.styles));
  }
}

/**
 * GET /v1/console/sso's refusals: JSON as every route's, except for a browser that asks for a page (the sign-in form's
 * navigation, `Accept: text/html`), which gets one like the callback's with a way back, never a raw body. An
 * organization without single sign-on (a mistyped name reads the same) is named as typed. No cookie is touched.
 */
@Catch()
export class SsoStartPageFilter implements ExceptionFilter {
  private readonly json = new AllExceptionsFilter();
  private readonly signInUrl: string;
  private readonly styles: string[];

  constructor(@InjectConfig() config: AppConfiguration) {
    this.signInUrl = `${config.console.publicBaseUrl}/console/sign-in`;
    this.styles = consoleStylesheets(config.console.assetsDir);
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<Request>();
    const response = host.switchToHttp().getResponse<Response>();
    const error = toAppError(exception);
    // The same URL answers a page or JSON as the request asks: a cache must tell them apart.
    if (!response.headersSent) response.vary('Accept');
    if (
      error === undefined ||
      response.headersSent ||
      request.accepts(['application/json', 'text/html']) !== 'text/html'
    ) {
      this.json.catch(exception, host);
      return;
    }
    const org = typeof request.query.org === 'string' ? request.query.org.trim() : '';
    const message =
      error.reason === 'sso_not_configured' && org !== ''
        ? `Gatehouse has no single sign-on for the organization “${org}”. Check its name (an administrator can tell ` +
          'you how Gatehouse spells it), or ask an administrator for a one-time sign-in link'
        : error.message;
    response.set(CONSOLE_SECURITY_HEADERS);
    for (const [name, value] of Object.entries(error.headers)) response.setHeader(name, value);
    response
      .status(HTTP_STATUS[error.code])
      .setHeader('Cache-Control', 'no-store')
      .type('text/html; charset=utf-8')
      .send(ssoPage(TITLES[error.code], message, this.signInUrl, this.styles));
  }
}
