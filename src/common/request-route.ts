import type { Request } from 'express';

/** The route label of a request no route answered: 404s, and requests refused before routing (bad body, draining). */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * The route template that answered (`/v1/user-api-keys/:id`), never the path itself: no id, token or query string.
 * Read once the response is done (metrics, traces).
 */
export function routeTemplate(req: Request): string {
  const route = req.route as { path?: unknown } | undefined;
  const endpoint = typeof route?.path === 'string' && !route.path.includes('*');
  return endpoint ? req.baseUrl + (route.path as string) : UNMATCHED_ROUTE;
}
