import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';

/** What the audit trail keeps of the request an action happened in. */
export type RequestContext = Pick<Request, 'id' | 'ip'>;

export const CurrentRequestContext = createParamDecorator(
  (_data: unknown, context: ExecutionContext): RequestContext => {
    const request = context.switchToHttp().getRequest<Request>();
    return { id: request.id, ip: request.ip };
  },
);
