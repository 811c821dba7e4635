import DataLoader from 'dataloader';
import { UUID } from '../common/uuid';

/** Most ids one batched query asks for; a larger batch is sent as several queries. */
export const MAX_BATCH = 256;

/** Any letter case: an id is looked up lower-cased. */
const ANY_CASE_UUID = new RegExp(UUID.source, 'i');

/** Hot-path lookups by primary key, batched per event-loop turn the DataLoader way (docs/adr/0010-data-access-repositories.md). */
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
  return (id) => (ANY_CASE_UUID.test(id) ? loader.load(id.toLowerCase()) : Promise.resolve(undefined));
}

/**
 * Look-ups by any text key (an issuer URL, a subject), batched per event-loop turn like {@link batchedById}: `load` gets
 * the distinct keys of the turn and answers with what each has (a key it leaves out gets `missing`).
 */
export function batchedByKey<Value>(
  load: (keys: string[]) => Promise<Map<string, Value>>,
  missing: Value,
): (key: string) => Promise<Value> {
  const loader = new DataLoader<string, Value>(
    async (keys) => {
      const found = await load([...new Set(keys)]);
      return keys.map((key) => found.get(key) ?? missing);
    },
    { cache: false, maxBatchSize: MAX_BATCH, batchScheduleFn: (callback) => setImmediate(callback) },
  );
  return (key) => loader.load(key);
}
