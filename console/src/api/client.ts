import { createGatehouseClient, GatehouseError, toGatehouseError, unwrap } from '../../../client';
import { endSession, getSession } from '../session';

/**
 * The console's only way to the server: the typed client (client/, docs/client.md) on the page's
 * own origin, with the session token as Bearer. A 401 on a Bearer request means the session is over
 * (expired, or the member was removed): the member is signed out with that reason.
 */
export const api = createGatehouseClient({
  baseUrl: window.location.origin,
  bearer: () => getSession()?.token,
});

api.use({
  onResponse({ request, response }) {
    if (response.status === 401 && request.headers.get('Authorization')?.startsWith('Bearer ')) {
      endSession('Your session has ended. Sign in again with a new link.');
    }
    return undefined;
  },
});

export { GatehouseError, toGatehouseError, unwrap };
