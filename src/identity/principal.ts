import type { Role } from './roles';

/**
 * Who is calling, as established by the Bearer guard for this request. It lives in identity (which
 * owns roles and their permissions) so that every feature module can name it without importing auth.
 */
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
