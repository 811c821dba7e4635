import { existsSync } from 'node:fs';
import { join } from 'node:path';
import express, { NextFunction, Request, Response, Router } from 'express';

/**
 * Headers of every /console response (docs/operations.md#web-console): scripts and styles from this origin only (the
 * built console has no inline script or style), calls to this origin only, no framing, no referrer (a sign-in URL never
 * leaks through one), no MIME sniffing.
 */
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

/**
 * Headers of the API documentation (/docs, Swagger UI): the console's, but Swagger UI's page has an
 * inline <style> and style attributes, so styles may be inline; scripts still come from this origin only.
 */
export const DOCS_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  ...CONSOLE_SECURITY_HEADERS,
  'Content-Security-Policy': CONSOLE_SECURITY_HEADERS['Content-Security-Policy'].replace(
    "style-src 'self'",
    "style-src 'self' 'unsafe-inline'",
  ),
};

export const CONSOLE_PATH = '/console';
export const DOCS_PATH = '/docs';

/** Every response: no MIME sniffing of a JSON answer into something a browser would run. */
export function noSniff(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  next();
}

/** The API documentation's security headers (DOCS_SECURITY_HEADERS). */
export function docsSecurityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.set(DOCS_SECURITY_HEADERS);
  next();
}

function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.set(CONSOLE_SECURITY_HEADERS);
  next();
}

/**
 * The web console's static files (built by `npm run build` into dist/console) under /console: hashed files under
 * /console/assets/ cached for good, every other GET a page of the single-page app (index.html, never cached, so that a
 * new release is picked up at once).
 */
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
