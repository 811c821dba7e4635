import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { AppError } from '../common/errors';
import { UNAVAILABLE_CLAIMS, WorkloadIdentityMessages } from './workload-identity-matching';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * POST /v1/workload-identities: a condition on `__proto__`, `constructor` or `prototype` is refused (400) while the
 * body is still as the client sent it. The validation pipe, which runs after the interceptors, deletes those names
 * from every object of a body (its guard against prototype pollution): the condition would be dropped without a word
 * and the identity would match more tokens than its creator asked for.
 */
@Injectable()
export class ConditionNamesInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const body: unknown = context.switchToHttp().getRequest<Request>().body;
    const conditions = isObject(body) ? body.conditions : undefined;
    if (isObject(conditions) && UNAVAILABLE_CLAIMS.some((name) => Object.hasOwn(conditions, name))) {
      throw new AppError('workload_identity_conditions_invalid', {
        message: WorkloadIdentityMessages.unavailableClaim,
      });
    }
    return next.handle();
  }
}
