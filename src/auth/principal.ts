import type { Role } from '../identity/roles';

/** Who is calling, as established by the Bearer guard for this request. */
export interface Principal {
  userId: string;
  organizationId: string;
  role: Role;
  tokenUse: 'access' | 'session';
  /** The API key an access token was minted from. */
  apiKeyId?: string;
}

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}
