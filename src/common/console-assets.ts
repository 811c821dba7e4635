import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import express, { NextFunction, Request, Response, Router } from 'express';

/** No referrer, so a sign-in URL never leaks; no inline script or style needed (docs/operations.md#web-console). */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=(), usb=()',
};

/** The console's, but Swagger UI needs inline styles; scripts still come from this origin only. */
export const DOCS_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  ...CONSOLE_SECURITY_HEADERS,
  'Content-Security-Policy': CONSOLE_SECURITY_HEADERS['Content-Security-Policy'].replace(
    "style-src 'self'",
    "style-src 'self' 'unsafe-inline'",
  ),
};

export const CONSOLE_PATH = '/console';
export const DOCS_PATH = '/docs';

/** A browser must never sniff a JSON answer into something it would run. */
export function noSniff(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  next();
}

export function docsSecurityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.set(DOCS_SECURITY_HEADERS);
  next();
}

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.set(CONSOLE_SECURITY_HEADERS);
  next();
}

/**
 * The console's built stylesheets (their hashed paths, as dist/console/index.html links them), so that the pages the
 * server writes itself (single sign-on's refusals) look like the console under its Content-Security-Policy; none when
 * the console is not built.
 */
export function consoleStylesheets(assetsDir: string): string[] {
  const indexFile = join(assetsDir, 'index.html');
  if (!existsSync(indexFile)) return [];
  const links = readFileSync(indexFile, 'utf8').match(/<link\b[^>]*>/g) ?? [];
  return links
    .filter((link) => /\brel="stylesheet"/.test(link))
    .map((link) => /\bhref="([^"]+)"/.exec(link)?.[1])
    .filter((href): href is string => href !== undefined && href.startsWith(`${CONSOLE_PATH}/`));
}

/** Hashed assets are cached for good; index.html never, so a new release is picked up at once. */
export function consoleRouter(assetsDir: string): Router | undefined {
  const indexFile = join(assetsDir, 'index.html');
  if (!existsSync(indexFile)) return undefined;
  const router = express.Router();
  router.use(securityHeaders);
  router.use(
    '/assets',
    express.static(join(assetsDir, 'assets'), { index: false, redirect: false, immutable: true, maxAge: '365d' }),
  );
  router.use(express.static(assetsDir, { index: false, redirect: false, maxAge: 0 }));
  router.use((req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || req.path.startsWith('/assets/')) {
      next();
      return;
    }
    if (req.originalUrl.split('?')[0] === CONSOLE_PATH) {
      res.redirect(301, `${CONSOLE_PATH}/`);
      return;
    }
    res.set('Cache-Control', 'no-cache');
    res.sendFile(indexFile, (error) => {
      if (error !== undefined && !res.headersSent) next(error);
    });
  });
  return router;
}
