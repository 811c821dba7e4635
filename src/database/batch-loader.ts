import DataLoader from 'dataloader';

/** Most ids one batched query asks for; a larger batch is sent as several queries. */
export const MAX_BATCH = 256;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A hot-path lookup of rows by UUID primary key (docs/performance.md), batched the DataLoader way: the lookups that
 * requests ask for while the event loop serves one batch of ready sockets go to the database as one query when that
 * batch is done (setImmediate), and each caller gets its row.
 */
export function batchedById<Row extends { id: string }>(
  load: (ids: string[]) => Promise<Row[]>,
): (id: string) => Promise<Row | undefined> {
  const loader = new DataLoader<string, Row | undefined>(
    async (ids) => {
      const rows = await load([...new Set(ids)]);
      const byId = new Map(rows.map((row) => [row.id.toLowerCase(), row]));
      return ids.map((id) => byId.get(id));
    },
    { cache: false, maxBatchSize: MAX_BATCH, batchScheduleFn: (callback) => setImmediate(callback) },
  );
  return (id) => (UUID.test(id) ? loader.load(id.toLowerCase()) : Promise.resolve(undefined));
}
