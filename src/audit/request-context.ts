import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { clientAddress } from '../common/client-address';

/** What the audit trail keeps of the request an action happened in. */
export type RequestContext = Pick<Request, 'id' | 'ip'>;

export const CurrentRequestContext = createParamDecorator(
  (_data: unknown, context: ExecutionContext): RequestContext => {
    const request = context.switchToHttp().getRequest<Request>();
    return { id: request.id, ip: clientAddress(request) };
  },
);
