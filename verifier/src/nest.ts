import type { Verifier } from './index';
import { check, isRefusal } from './http';

/** The parts of Nest's ExecutionContext the guard uses (no dependency on @nestjs/common). */
interface HttpContext {
  switchToHttp(): {
    getRequest(): {
      headers: { authorization?: string | string[]; 'x-forwarded-for'?: string | string[] };
      socket?: { remoteAddress?: string };
      gatehouse?: unknown;
    };
    getResponse(): { setHeader(name: string, value: string): unknown };
  };
}

/**
 * An error Nest's default exception filter answers with its status: it has the "http-errors" signature Nest
 * recognises (`statusCode`, `status`, `expose`), so `{ statusCode, message }` goes out with that status.
 */
export class GatehouseRefusal extends Error {
  readonly status: number;
  readonly expose = true;

  constructor(
    readonly statusCode: number,
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.status = statusCode;
  }

  getStatus(): number {
    return this.statusCode;
  }
}

/**
 * A NestJS guard: `@UseGuards(new GatehouseGuard(verifier, ['orders:read']))`. Sets `request.gatehouse`; a refusal
 * sets its WWW-Authenticate header and throws GatehouseRefusal (401, 403 for a missing scope or an address the token's
 * key does not allow, or 503 for a stale feed).
 */
export class GatehouseGuard {
  constructor(
    private readonly verifier: Verifier,
    private readonly scopes: readonly string[] = [],
  ) {}

  async canActivate(context: HttpContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest();
    const result = await check(
      this.verifier,
      request.headers.authorization,
      this.scopes,
      this.verifier.clientAddress(request),
    );
    if (isRefusal(result)) {
      const response = http.getResponse();
      for (const [name, value] of Object.entries(result.headers)) response.setHeader(name, value);
      throw new GatehouseRefusal(result.status, result.body.message, result.body.code);
    }
    request.gatehouse = result;
    return true;
  }
}
