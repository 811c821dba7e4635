import { Client, ClientConfig } from 'pg';

const QUERY_READ_TIMEOUT = 'Query read timeout';

type QueryFunction = (...args: unknown[]) => unknown;
type Release = (error?: Error | boolean) => void;

function isReadTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === QUERY_READ_TIMEOUT;
}

/** The clients of one pool: pg-pool hands every client it creates the same options object. */
const poolMembers = new WeakMap<object, Set<TimeoutSafePgClient>>();

/** For a database that goes silent rather than refusing (docs/adr/0014-timeout-safe-pg-client.md). */
export class TimeoutSafePgClient extends Client {
  private readonly members: Set<TimeoutSafePgClient>;
  private releaseToPool: Release | undefined;
  private checkedOut = false;

  constructor(config?: string | ClientConfig) {
    super(config);
    const poolKey = typeof config === 'object' ? config : TimeoutSafePgClient;
    let members = poolMembers.get(poolKey);
    if (members === undefined) poolMembers.set(poolKey, (members = new Set()));
    this.members = members;
    members.add(this);
    this.once('end', () => members.delete(this));

    const query = super.query.bind(this) as QueryFunction;
    const wrapped: QueryFunction = (...args) => {
      const callback = args.at(-1);
      if (typeof callback === 'function') {
        args[args.length - 1] = (error: unknown, result: unknown): unknown => {
          this.onQueryError(error);
          return (callback as (error: unknown, result: unknown) => unknown)(error, result);
        };
        return query(...args);
      }
      const result = query(...args);
      // Attached before the caller's handler, so the client is closed before the caller goes on.
      if (result instanceof Promise) void result.catch((error: unknown) => this.onQueryError(error));
      return result;
    };
    this.query = wrapped as Client['query'];
  }

  /** pg-pool sets `release` on every check-out; knowing which clients are idle comes from that. */
  get release(): Release | undefined {
    return this.releaseToPool;
  }

  set release(release: Release | undefined) {
    this.checkedOut = release !== undefined;
    this.releaseToPool =
      release === undefined
        ? undefined
        : (error) => {
            this.checkedOut = false;
            release(error);
          };
  }

  private onQueryError(error: unknown): void {
    if (!isReadTimeout(error)) return;
    // end() destroys the socket at once; the pool then removes the client on release instead of keeping it.
    this.end().catch(() => undefined);
    for (const member of this.members) if (member !== this && !member.checkedOut) member.dropIdle();
  }

  /** The pool's idle-client error listener removes a client whose connection breaks. */
  private dropIdle(): void {
    this.connection.stream.destroy();
  }
}
